package sim

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/replica"
)

// The broker side: what broker/ does around replica.Manager for the
// controller's requests (fencing by controller epoch), and what the
// follower fetchers do (replica/fetcher.go, truncate.go), as messages on
// the simulated network. The leader's side of a fetch is the real
// Partition.UpdateFollowerFetch, Log.Read and the HW rule; the follower's
// truncation is the real replica.TruncationOffset on the real log; the
// loop around them is a model of the fetcher.

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

// followerFetch is a follower's fetch state for one partition.
type followerFetch struct {
	leader, epoch int32
	truncate      bool
	inFlight      bool
	seq           int
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
		if f.inFlight {
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
	b.c.sched.After(2*b.c.cfg.Net.MaxDelay+sendRetryBackoff, "~fetch timeout", func() {
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
	st := p.State()
	return st.Leader == f.leader && st.LeaderEpoch == f.epoch
}

// sendEpochQuery is truncate.go: OffsetForLeaderEpoch for the latest local
// epoch, answered as broker/23_offset_for_leader_epoch.go does.
func (b *Broker) sendEpochQuery(inc int, p *replica.Partition, f *followerFetch) {
	l := p.Log()
	part := p.TopicPartition().Partition
	latest := l.LatestEpoch()
	if latest < 0 {
		if err := l.TruncateTo(l.HighWatermark()); err != nil {
			b.c.fail("broker %d truncate: %v", b.id, err)
		}
		f.truncate = false
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
		endEpoch, endOffset := lp.Log().EndOffsetForEpoch(latest)
		b.c.net.Send(f.leader, b.id, "OffsetForLeaderEpoch answer", func() {
			if !b.current(inc, p, f, seq) {
				return
			}
			f.inFlight = false
			leo := l.LogEndOffset()
			offset, done := p.TruncationOffset(endEpoch, endOffset, leo, l.HighWatermark())
			if offset < leo {
				b.c.sched.Tracef("broker %d p%d truncates %d -> %d (leader %d epoch %d ends at %d in %d)", b.id, part, leo, offset, f.leader, latest, endOffset, endEpoch)
				if err := l.TruncateTo(offset); err != nil {
					b.c.fail("broker %d truncate: %v", b.id, err)
				}
			}
			f.truncate = !done
		})
	})
}

// sendFetch is one follower fetch at the log end offset.
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
		if err := lp.UpdateFollowerFetch(b.id, offset, logStart); err != nil {
			return
		}
		ll := lp.Log()
		if offset > ll.LogEndOffset() {
			// OFFSET_OUT_OF_RANGE: the follower looks for where it diverged again.
			b.c.net.Send(f.leader, b.id, "Fetch out of range", func() {
				if b.current(inc, p, f, seq) {
					f.inFlight, f.truncate = false, true
				}
			})
			return
		}
		sl, err := ll.Read(offset, 1<<20, ll.LogEndOffset(), true)
		if err != nil {
			b.c.fail("broker %d read p%d at %d: %v", lb.id, part, offset, err)
			return
		}
		var data []byte
		if sl.Size > 0 {
			if data, err = sl.ReadInto(nil); err != nil {
				b.c.fail("broker %d read p%d: %v", lb.id, part, err)
				return
			}
		}
		hw := lp.HighWatermark()
		b.c.net.Send(f.leader, b.id, "Fetch answer", func() {
			if !b.current(inc, p, f, seq) {
				return
			}
			f.inFlight = false
			if l.LogEndOffset() != offset {
				return // a duplicate, or the log moved meanwhile
			}
			if len(data) > 0 {
				if _, err := l.AppendAsFollower(data); err != nil {
					b.c.sched.Tracef("broker %d p%d follower append at %d: %v", b.id, part, offset, err)
					f.truncate = true
					return
				}
			}
			// Follower HW = min(leader HW, own LEO); SetHighWatermark clamps.
			l.SetHighWatermark(hw)
		})
	})
}
