package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/replica"
)

// The broker side: what broker/ does around replica.Manager for the
// controller's requests (fencing by controller epoch), and the follower
// fetchers' requests and answers as messages on the simulated network.
// What a follower does with an answer is the real code the fetcher runs
// (replica/fetcher_step.go: Partition.TruncationEpoch, ApplyEpochAnswer,
// ApplyFetched, on the real log); the leader's side of a fetch is the
// real Partition.UpdateFollowerFetch, Log.Read and the HW rule, in a
// model of broker/01_fetch.go's handler; the loop that sends the requests
// is a model of the fetcher's (one partition at a time, no fetch sessions).

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
	}
	if !answered {
		b.c.sched.Tracef("AlterPartition %d->%d answer lost", b.id, target)
		return nil, errLost
	}
	return resp, nil
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
// replica.Config's and the simulated fetcher's.
const fetchBackoff = time.Second

// followerFetch is a follower's fetch state for one partition.
type followerFetch struct {
	leader, epoch int32
	truncate      bool
	inFlight      bool
	seq           int
	// delayUntil backs the partition off after an error, as the fetcher's.
	delayUntil time.Time
}

// follow applies a step of the real follower code to f.
func (b *Broker) follow(f *followerFetch, s replica.FollowerStep) {
	f.truncate = s.Truncate
	if s.Backoff {
		f.delayUntil = b.c.sched.Now().Add(fetchBackoff)
	}
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
	sort.Slice(parts, func(i, j int) bool { return parts[i].TopicPartition().Partition < parts[j].TopicPartition().Partition })
	for _, p := range parts {
		if p.TopicPartition().Topic != topic {
			continue // only the main topic has followers
		}
		part := p.TopicPartition().Partition
		st := p.State()
		if st.Leader == b.id || st.Leader < 0 {
			delete(b.fetch, part)
			continue
		}
		f := b.fetch[part]
		if f == nil || f.leader != st.Leader || f.epoch != st.LeaderEpoch {
			f = &followerFetch{leader: st.Leader, epoch: st.LeaderEpoch, truncate: true}
			b.fetch[part] = f
		}
		if f.inFlight || b.c.sched.Now().Before(f.delayUntil) {
			continue
		}
		if f.truncate {
			b.sendEpochQuery(inc, p, f)
		} else {
			b.sendFetch(inc, p, f)
		}
	}
}

// inFlightFor marks f busy until its answer or a timeout.
func (b *Broker) inFlightFor(f *followerFetch) int {
	f.inFlight = true
	f.seq++
	seq := f.seq
	b.c.sched.After(2*b.c.cfg.Net.MaxDelay+controller.SendRetryBackoff, "~fetch timeout", func() {
		if f.seq == seq {
			f.inFlight = false
		}
	})
	return seq
}

// current reports whether an answer for f (sent as seq) still applies: the
// partition still follows the same leader in the same epoch, as the real
// fetcher drops a partition before its role changes.
func (b *Broker) current(inc int, p *replica.Partition, f *followerFetch, seq int) bool {
	if !b.live(inc) || b.fetch[p.TopicPartition().Partition] != f || f.seq != seq || !f.inFlight {
		return false
	}
	if b.rm.Get(topic, p.TopicPartition().Partition) != p {
		return false // stopped (a reassignment removed the replica), maybe hosted again since
	}
	st := p.State()
	return st.Leader == f.leader && st.LeaderEpoch == f.epoch
}

// sendEpochQuery is truncate.go: OffsetForLeaderEpoch for the latest local
// epoch, answered as broker/23_offset_for_leader_epoch.go does.
func (b *Broker) sendEpochQuery(inc int, p *replica.Partition, f *followerFetch) {
	part := p.TopicPartition().Partition
	latest, step := p.TruncationEpoch(b.stepLog)
	if latest < 0 {
		b.follow(f, step)
		return
	}
	seq := b.inFlightFor(f)
	lb := b.c.brokers[f.leader-1]
	linc := lb.incarnation
	current := f.epoch
	b.c.net.Send(b.id, f.leader, "OffsetForLeaderEpoch", func() {
		if !lb.live(linc) {
			return
		}
		lp := lb.rm.Get(topic, part)
		if lp == nil || lp.CheckLeaderEpoch(current) != nil || !lp.IsLeader() {
			return // an error answer: the follower retries after its timeout
		}
		rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
		rp.Partition = part
		rp.LeaderEpoch, rp.EndOffset = lp.Log().EndOffsetForEpoch(latest)
		b.c.net.Send(f.leader, b.id, "OffsetForLeaderEpoch answer", func() {
			if !b.current(inc, p, f, seq) {
				return
			}
			f.inFlight = false
			b.follow(f, p.ApplyEpochAnswer(&rp, b.stepLog))
		})
	})
}

// sendFetch is one follower fetch at the log end offset, answered as
// broker/01_fetch.go's readFetch answers a follower.
func (b *Broker) sendFetch(inc int, p *replica.Partition, f *followerFetch) {
	l := p.Log()
	part := p.TopicPartition().Partition
	seq := b.inFlightFor(f)
	offset, logStart, epoch := l.LogEndOffset(), l.LogStartOffset(), f.epoch
	lb := b.c.brokers[f.leader-1]
	linc := lb.incarnation
	b.c.net.Send(b.id, f.leader, "Fetch", func() {
		if !lb.live(linc) {
			return
		}
		lp := lb.rm.Get(topic, part)
		if lp == nil || lp.CheckLeaderEpoch(epoch) != nil {
			return
		}
		ll := lp.Log()
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = part
		rp.HighWatermark, rp.LogStartOffset = lp.HighWatermark(), ll.LogStartOffset()
		answer := func(name string) {
			b.c.net.Send(f.leader, b.id, name, func() {
				if !b.current(inc, p, f, seq) {
					return
				}
				f.inFlight = false
				if l.LogEndOffset() != offset {
					return // a duplicate, or the log moved meanwhile (the fetcher's process)
				}
				b.follow(f, p.ApplyFetched(&rp, f.leader, b.stepLog))
			})
		}
		if offset < rp.LogStartOffset || offset > ll.LogEndOffset() {
			rp.ErrorCode = kerr.OffsetOutOfRange.Code
			answer("Fetch out of range")
			return
		}
		if err := lp.UpdateFollowerFetch(b.id, offset, logStart); err != nil {
			return
		}
		rp.HighWatermark = lp.HighWatermark()
		sl, err := ll.Read(offset, 1<<20, ll.LogEndOffset(), true)
		if err != nil {
			b.c.fail("broker %d read p%d at %d: %v", lb.id, part, offset, err)
			return
		}
		if sl.Size > 0 {
			if rp.RecordBatches, err = sl.ReadInto(nil); err != nil {
				b.c.fail("broker %d read p%d: %v", lb.id, part, err)
				return
			}
		}
		answer("Fetch answer")
	})
}
