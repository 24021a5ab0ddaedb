package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/broker"
	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
)

// The broker side: what broker/ does around replica.Manager for the
// controller's requests (fencing by controller epoch), and the follower
// fetchers' requests and answers as messages on the simulated network.
// The requests are the real fetcher's (replica.LeaderFetcher, one per
// follower and leader: OffsetForLeaderEpoch for the partitions to
// truncate, then one Fetch for all the others, in its fetch session, with
// the follower throttle), and so is what a follower does with an answer
// (LeaderFetcher.ApplyEpochResponse, ApplyFetchResponse, on the real log).
// The leader answers a Fetch with the broker's core for followers
// (broker.FollowerFetches: the broker's fetch session cache, each
// partition by the real replica.Manager.ReadForFollower with
// UpdateFollowerFetch, the HW rule, the leader's throttle and the read),
// and an OffsetForLeaderEpoch with the core of
// broker/23_offset_for_leader_epoch.go's handler (replica.AnswerEpochs:
// the current_leader_epoch check and the log's epoch cache).

var errLost = errors.New("sim: request or answer lost")

// brokerCluster is replica.Cluster for one broker incarnation.
type brokerCluster struct {
	b   *Broker
	inc int
}

func (bc *brokerCluster) Request(context.Context, int32, string, kmsg.Request) (kmsg.Response, error) {
	return nil, errors.New("sim: fetchers do not run; the simulation replicates")
}

// AlterPartition reaches the controller this broker knows of. The call is
// atomic in virtual time; the network decides whether the request arrived
// and whether its answer came back (the controller may have applied a
// change whose answer is lost).
func (bc *brokerCluster) AlterPartition(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	b := bc.b
	target := b.knownController
	if target < 0 {
		return nil, errors.New("sim: no controller known")
	}
	arrived, answered := b.c.net.RoundTrip(b.id, target)
	if !arrived {
		b.c.sched.Tracef("AlterPartition %d->%d lost", b.id, target)
		return nil, errLost
	}
	tb := b.c.brokers[target-1]
	resp := notController(req)
	if tb.up && tb.ctrl != nil {
		var err error
		if resp, err = tb.ctrl.alterPartition(req); err != nil {
			b.c.sched.Tracef("AlterPartition %d->%d timed out: %v", b.id, target, err)
			return nil, err
		}
		b.c.traceIneligible(b.id, req, resp)
	}
	if !answered {
		b.c.sched.Tracef("AlterPartition %d->%d answer lost", b.id, target)
		return nil, errLost
	}
	return resp, nil
}

// traceIneligible traces and counts the changes of req the controller
// refused with INELIGIBLE_REPLICA, with the broker epochs they named.
func (c *Cluster) traceIneligible(leader int32, req *kmsg.AlterPartitionRequest, resp *kmsg.AlterPartitionResponse) {
	for i, rt := range resp.Topics {
		for j, rp := range rt.Partitions {
			if rp.ErrorCode != kerr.IneligibleReplica.Code || i >= len(req.Topics) || j >= len(req.Topics[i].Partitions) {
				continue
			}
			c.ineligible++
			var members []string
			for _, e := range req.Topics[i].Partitions[j].NewEpochISR {
				members = append(members, fmt.Sprintf("%d@%d", e.BrokerID, e.BrokerEpoch))
			}
			c.sched.Tracef("p%d: leader %d's ISR change [%s] (broker@epoch) refused: INELIGIBLE_REPLICA", rp.Partition, leader, strings.Join(members, " "))
		}
	}
}

// onLeaderAndISR is the broker's LeaderAndISR handler: requests of an
// older controller epoch are refused (broker's controllerFence).
func (b *Broker) onLeaderAndISR(req *kmsg.LeaderAndISRRequest) {
	if req.ControllerEpoch < b.controllerEpoch {
		return
	}
	b.controllerEpoch = req.ControllerEpoch
	b.knownController = req.ControllerID
	b.rm.ApplyLeaderAndISR(req)
}

// fetchBackoff is replica.fetch.backoff.ms (Kafka's default), the real
// replica.Config's and the simulated fetcher's after an error answer.
const fetchBackoff = time.Second

// followerFetch is a follower's fetcher toward one leader: the real
// fetcher's steps and the states of the partitions it fetches, by topic
// and partition, with at most one request in flight, as the fetcher's
// goroutine sends one at a time.
type followerFetch struct {
	leader   int32
	steps    *replica.LeaderFetcher
	parts    map[log.TopicPartition]*fetchedPartition
	inFlight bool
	seq      int
	// delayUntil: the leader answered the last Fetch with an error, and
	// the fetcher waits replica.fetch.backoff.ms, as the fetcher's goroutine.
	delayUntil time.Time
}

// fetchedPartition is a partition a follower fetches, with the real fetch
// state, as the fetcher's fetchPart.
type fetchedPartition struct {
	p  *replica.Partition
	st replica.FetchPartitionState
}

// traceHandler puts what the real follower steps log into the trace.
type traceHandler struct{ b *Broker }

func (h traceHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h traceHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h traceHandler) WithGroup(string) slog.Handler                { return h }
func (h traceHandler) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "broker %d: %s", h.b.id, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	h.b.c.sched.Tracef("%s", sb.String())
	return nil
}

func (b *Broker) fetchAll(inc int) {
	parts := b.rm.All()
	sort.Slice(parts, func(i, j int) bool { return tpLess(parts[i].TopicPartition(), parts[j].TopicPartition()) })
	// What the manager's addFetch and removeFetch do on role changes: a
	// partition joins its leader's fetcher, to truncate first, when it
	// starts to follow it (in a new epoch, or hosted again), and leaves
	// the fetcher of a leader it no longer follows.
	following := map[log.TopicPartition]bool{}
	for _, p := range parts {
		tp, st := p.TopicPartition(), p.State()
		if st.Leader == b.id || st.Leader < 0 {
			continue
		}
		following[tp] = true
		f := b.fetch[st.Leader]
		if f == nil {
			f = &followerFetch{leader: st.Leader, steps: b.rm.NewLeaderFetcher(st.Leader, b.stepLog), parts: map[log.TopicPartition]*fetchedPartition{}}
			b.fetch[st.Leader] = f
		}
		if fp := f.parts[tp]; fp == nil || fp.p != p || fp.st.LeaderEpoch != st.LeaderEpoch {
			f.parts[tp] = &fetchedPartition{p: p, st: replica.FetchPartitionState{LeaderEpoch: st.LeaderEpoch, Truncate: true}}
		}
	}
	for _, leader := range sortedKeys(b.fetch) {
		f := b.fetch[leader]
		for tp, fp := range f.parts {
			if !following[tp] || fp.p.State().Leader != leader {
				delete(f.parts, tp)
			}
		}
		if !f.inFlight && !b.c.sched.Now().Before(f.delayUntil) {
			b.fetchRound(inc, f)
		}
	}
}

func tpLess(a, b log.TopicPartition) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

// fetchParts lists f's partitions in a fixed order (the fetcher's map
// order does not matter to the leader; the simulation's must not vary).
func (f *followerFetch) fetchParts() []replica.FetchPartition {
	tps := make([]log.TopicPartition, 0, len(f.parts))
	for tp := range f.parts {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tpLess(tps[i], tps[j]) })
	out := make([]replica.FetchPartition, len(tps))
	for i, tp := range tps {
		fp := f.parts[tp]
		out[i] = replica.FetchPartition{P: fp.p, State: &fp.st}
	}
	return out
}

// lookup finds a partition an answer of f's leader names, if f still
// fetches it in the epoch it was added with, as the real fetcher drops a
// partition before its role changes (a reassignment may have stopped it,
// maybe hosted it again since).
func (b *Broker) lookup(f *followerFetch) replica.FetchLookup {
	return func(tp log.TopicPartition) (replica.FetchPartition, bool) {
		fp := f.parts[tp]
		if fp == nil || b.rm.Get(tp.Topic, tp.Partition) != fp.p {
			return replica.FetchPartition{}, false
		}
		if st := fp.p.State(); st.Leader != f.leader || st.LeaderEpoch != fp.st.LeaderEpoch {
			return replica.FetchPartition{}, false
		}
		return replica.FetchPartition{P: fp.p, State: &fp.st}, true
	}
}

// fetchRound is one turn of the fetcher's loop: OffsetForLeaderEpoch for
// the partitions to truncate, else the Fetch of the others.
func (b *Broker) fetchRound(inc int, f *followerFetch) {
	parts := f.fetchParts()
	if req, sent := f.steps.EpochRequest(parts); req != nil {
		b.sendEpochQuery(inc, f, req, sent)
		return
	}
	if req, sent, _ := f.steps.FetchRequest(parts); req != nil {
		// The version the connection pins: Brook's highest, which Kafka
		// 3.9's fetcher sends too (topic ids, replica_state).
		req.Version = 17
		b.sendFetch(inc, f, req, sent)
	}
}

// inFlightFor marks f busy until its answer or a timeout; a timeout is a
// failed request (onTimeout). The fetcher goroutine then waits
// replica.fetch.backoff.ms; the simulation sends again at the next tick:
// its network loses one message in twenty, and a second's pause after
// each loss stalled replication enough that transactions begun late in a
// run were still open after the quiet phase (seeds 25 and 105).
func (b *Broker) inFlightFor(f *followerFetch, onTimeout func()) int {
	f.inFlight = true
	f.seq++
	seq := f.seq
	b.c.sched.After(2*b.c.cfg.Net.MaxDelay+controller.SendRetryBackoff, "~fetch timeout", func() {
		if f.seq == seq && f.inFlight {
			f.inFlight = false
			onTimeout()
		}
	})
	return seq
}

// answered reports whether an answer for f (sent as seq) is the one it
// waits for, and takes it.
func (b *Broker) answered(inc int, f *followerFetch, seq int) bool {
	if !b.live(inc) || b.fetch[f.leader] != f || f.seq != seq || !f.inFlight {
		return false
	}
	f.inFlight = false
	return true
}

// sendEpochQuery sends the fetcher's OffsetForLeaderEpoch, answered by the
// broker's handler's core (replica.AnswerEpochs).
func (b *Broker) sendEpochQuery(inc int, f *followerFetch, req *kmsg.OffsetForLeaderEpochRequest, sent replica.EpochSent) {
	seq := b.inFlightFor(f, func() {})
	lb := b.c.brokers[f.leader-1]
	linc := lb.incarnation
	b.c.net.Send(b.id, f.leader, "OffsetForLeaderEpoch", func() {
		if !lb.live(linc) {
			return // the connection fails: the follower backs off after its timeout
		}
		resp := replica.AnswerEpochs(req, lb.hostedPartition)
		b.c.net.Send(f.leader, b.id, "OffsetForLeaderEpoch answer", func() {
			if b.answered(inc, f, seq) {
				f.steps.ApplyEpochResponse(resp, sent, b.lookup(f))
			}
		})
	})
}

// hostedPartition is the broker's hostedPartition for a follower's query:
// the partition this broker hosts, NOT_LEADER_OR_FOLLOWER for any other
// (the simulation's replicas need no CLUSTER_ACTION and ask only of
// partitions the controller created).
func (b *Broker) hostedPartition(topic string, partition int32) (*replica.Partition, int16) {
	if p := b.rm.Get(topic, partition); p != nil {
		return p, 0
	}
	return nil, kerr.NotLeaderForPartition.Code
}

// sendFetch sends the fetcher's Fetch, answered as broker/01_fetch.go
// answers a follower: each partition by ReadForFollower, in the request's
// order, within its partition_max_bytes and what remains of max_bytes.
func (b *Broker) sendFetch(inc int, f *followerFetch, req *kmsg.FetchRequest, sent replica.FetchSent) {
	seq := b.inFlightFor(f, func() { _ = f.steps.FetchAnswered(nil, errLost) })
	lb := b.c.brokers[f.leader-1]
	linc := lb.incarnation
	b.c.net.Send(b.id, f.leader, "Fetch", func() {
		if !lb.live(linc) {
			return
		}
		resp, ok := lb.answerFetch(req)
		if !ok {
			return
		}
		b.c.net.Send(f.leader, b.id, "Fetch answer", func() {
			if !b.answered(inc, f, seq) {
				return
			}
			if err := f.steps.FetchAnswered(resp, nil); err != nil {
				f.delayUntil = b.c.sched.Now().Add(fetchBackoff)
				return
			}
			f.steps.ApplyFetchResponse(resp, sent, b.lookup(f))
		})
	})
}

// leaderSessions is a broker incarnation's session cache for its
// followers' fetches (a restart empties it, as the broker's).
type leaderSessions struct {
	inc     int
	fetches *broker.FollowerFetches
}

// answerFetch is the leader's answer to a follower's Fetch, by the
// broker's core (broker.FollowerFetches: its fetch session cache, each
// partition answered by ReadForFollower); false when the simulation
// failed reading it.
func (b *Broker) answerFetch(req *kmsg.FetchRequest) (*kmsg.FetchResponse, bool) {
	if b.sessions.fetches == nil || b.sessions.inc != b.incarnation {
		b.sessions = leaderSessions{inc: b.incarnation, fetches: broker.NewFollowerFetches(broker.FollowerFetchesConfig{
			Replicas: b.rm, SessionSlots: fetchSessionSlots, Now: b.c.sched.Now,
			NewSessionID: func() int32 { return b.c.sched.Rand.Int31n(math.MaxInt32) + 1 },
			TopicName:    b.topicName,
		})}
	}
	resp, err := b.sessions.fetches.Serve(req)
	if err != nil {
		b.c.fail("broker %d answering a fetch: %v", b.id, err)
		return nil, false
	}
	return resp, true
}

// fetchSessionSlots is max.incremental.fetch.session.cache.slots (Kafka's
// default).
const fetchSessionSlots = 1000

// topicName is the broker's metadata lookup of a topic id, from the
// partitions it hosts.
func (b *Broker) topicName(id [16]byte) (string, bool) {
	for _, p := range b.rm.All() {
		if p.TopicID() == id {
			return p.TopicPartition().Topic, true
		}
	}
	return "", false
}
