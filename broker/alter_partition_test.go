package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// fetchGate holds one follower's fetches at one leader, so that the
// follower lags while the controller knows nothing of it, and records each
// replica's last fetch offset of a topic's partition 0 once the leader has
// handled it.
type fetchGate struct {
	mu               sync.Mutex
	leader, follower int32
	topic            string
	topicID          [16]byte
	held             chan struct{} // non-nil while the follower's fetches wait
	inFlight         int           // follower fetches in the leader's handler
	fetched          map[int32]int64
}

func (g *fetchGate) install(b *Broker) {
	self := b.cfg.BrokerID
	inner := b.handlers[1]
	b.handlers[1] = handler{inner.min, inner.max, func(ctx context.Context, r *request, kr kmsg.Request) (reply, error) {
		req := kr.(*kmsg.FetchRequest)
		rid := fetchReplicaID(req)
		g.mu.Lock()
		gated := self == g.leader && rid == g.follower
		for gated && g.held != nil {
			held := g.held
			g.mu.Unlock()
			select {
			case <-held:
			case <-ctx.Done():
				return reply{}, ctx.Err()
			}
			g.mu.Lock()
		}
		if gated {
			g.inFlight++
		}
		g.mu.Unlock()
		rep, err := inner.fn(ctx, r, kr)
		g.mu.Lock()
		defer g.mu.Unlock()
		if gated {
			g.inFlight--
		}
		if self == g.leader && rid >= 0 && err == nil {
			for _, t := range req.Topics {
				if t.Topic != g.topic && t.TopicID != g.topicID {
					continue
				}
				for _, p := range t.Partitions {
					if p.Partition == 0 {
						g.fetched[rid] = p.FetchOffset
					}
				}
			}
		}
		return rep, err
	}}
}

func (g *fetchGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = make(chan struct{})
	}
}

// waitIdle waits until no follower fetch is in the leader's handler, so
// that records produced afterwards cannot reach the held follower.
func (g *fetchGate) waitIdle(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.inFlight != 0 {
			return fmt.Errorf("%d follower fetches in flight", g.inFlight)
		}
		return nil
	})
}

func (g *fetchGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

// alterLoss is an AlterPartition hook that, while losing, lets the
// leader's requests reach the controller and then drops the answer, as a
// connection lost after the controller applied the change.
type alterLoss struct {
	mu     sync.Mutex
	leader int32
	losing bool
	// onApplied runs, once, when the controller accepted a change whose
	// answer is then lost.
	onApplied func(*kmsg.AlterPartitionResponse)
	lost      int // answers dropped
	delivered int // answers passed on after losing ended
}

var errAnswerLost = errors.New("test: AlterPartition answer lost")

func (l *alterLoss) install(b *Broker) {
	self := b.cfg.BrokerID
	b.alterPartitionTestHook = func(ctx context.Context, req *kmsg.AlterPartitionRequest, send alterPartitionSend) (*kmsg.AlterPartitionResponse, error) {
		resp, err := send(ctx, req)
		l.mu.Lock()
		defer l.mu.Unlock()
		if self != l.leader || err != nil {
			return resp, err
		}
		if !l.losing {
			if l.lost > 0 {
				l.delivered++
			}
			return resp, nil
		}
		l.lost++
		if f := l.onApplied; f != nil && accepted(resp) {
			l.onApplied = nil
			f(resp)
		}
		return nil, errAnswerLost
	}
}

func (l *alterLoss) counts() (lost, delivered int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost, l.delivered
}

// accepted reports whether resp accepted every partition's change.
func accepted(resp *kmsg.AlterPartitionResponse) bool {
	if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
		return false
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return false
			}
		}
	}
	return true
}

// TestAlterPartitionAnswerLostAfterExpansion: a follower rejoins the ISR,
// the controller commits the expansion but its answer to the leader is lost.
// The controller may now elect that follower, so the leader must keep
// counting it for the HW: records the follower does not have must not become
// committed while the answer is missing. Once answers flow again the leader
// retries the same change, learns the committed ISR and the HW moves on.
func TestAlterPartitionAnswerLostAfterExpansion(t *testing.T) {
	const topic = "alter-lost"
	gate := &fetchGate{leader: -1, follower: -1, topic: topic, fetched: map[int32]int64{}}
	loss := &alterLoss{leader: -1}
	c := startReplClusterWith(t, func(b *Broker) {
		gate.install(b)
		loss.install(b)
	})
	t.Cleanup(gate.release) // let held fetches go before the brokers stop
	ctx := testContext(t)
	adm := kadm.NewClient(c.client())
	all := []int32{1, 2, 3}
	leader := c.createReplicated(ctx, adm, topic, nil)
	var follower, other int32 = -1, -1
	for _, id := range all {
		switch {
		case id == leader:
		case follower < 0:
			follower = id
		default:
			other = id
		}
	}
	lp := c.brokers[leader].b.replicas.Get(topic, 0)
	fp := c.brokers[follower].b.replicas.Get(topic, 0)
	id := lp.TopicID() // outside the lock: a failure here must not hang the cleanup
	gate.mu.Lock()
	gate.leader, gate.follower, gate.topicID = leader, follower, id
	gate.mu.Unlock()
	loss.mu.Lock()
	loss.leader = leader
	loss.mu.Unlock()

	// The follower stops fetching and falls behind (a follower at the
	// leader's LEO stays in sync however long it is quiet), so it leaves
	// the ISR; the shrink's answer arrives normally.
	gate.hold()
	gate.waitIdle(t)
	producer := c.client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	produceAcked(ctx, t, producer, topic, "behind", 50)
	isrWithout := slices.DeleteFunc(slices.Clone(all), func(id int32) bool { return id == follower })
	c.waitISR(ctx, adm, topic, isrWithout)

	// It fetches again and catches up; the leader proposes it back. The
	// controller applies that, and the answer is lost. Right then, before
	// the leader learns anything, the follower's fetches are held again.
	applied := make(chan *kmsg.AlterPartitionResponse, 1)
	loss.mu.Lock()
	loss.losing = true
	loss.onApplied = func(resp *kmsg.AlterPartitionResponse) {
		gate.hold()
		applied <- resp
	}
	loss.mu.Unlock()
	gate.release()
	select {
	case resp := <-applied:
		isr := slices.Clone(resp.Topics[0].Partitions[0].ISR)
		slices.Sort(isr)
		if !slices.Equal(isr, all) {
			t.Fatalf("the controller applied ISR %v, want %v", isr, all)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the leader never proposed the follower back into the ISR")
	}
	c.waitISR(ctx, adm, topic, all) // what the controller now says

	gate.waitIdle(t)
	produceAcked(ctx, t, producer, topic, "ahead", 50)
	leaderLEO := lp.Log().LogEndOffset()

	// The other ISR member has fetched everything, and the leader has
	// handled that fetch: a leader counting only the ISR it last heard of
	// (without the follower) would have moved the HW to its LEO.
	testutil.Eventually(t, 30*time.Second, func() error {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		if got := gate.fetched[other]; got < leaderLEO {
			return fmt.Errorf("broker %d fetched at %d, leader LEO %d", other, got, leaderLEO)
		}
		return nil
	})
	// The follower's LEO only grows here, so reading the HW first makes
	// HW > LEO a real overtaking.
	hw := lp.HighWatermark()
	followerLEO := fp.Log().LogEndOffset()
	if followerLEO >= leaderLEO {
		t.Fatalf("follower LEO %d reached the leader's %d although its fetches were held", followerLEO, leaderLEO)
	}
	if hw > followerLEO {
		t.Fatalf("leader HW %d is past the LEO %d of broker %d, which the controller's ISR %v holds: the HW counted an ISR smaller than the controller's",
			hw, followerLEO, follower, all)
	}
	if lost, _ := loss.counts(); lost == 0 {
		t.Fatal("no AlterPartition answer was lost")
	}

	// Answers flow again and the follower fetches: the leader retries the
	// change, learns the committed ISR, and the HW reaches its LEO.
	loss.mu.Lock()
	loss.losing = false
	loss.mu.Unlock()
	gate.release()
	testutil.Eventually(t, 60*time.Second, func() error {
		isr := lp.State().ISR
		slices.Sort(isr)
		if !slices.Equal(isr, all) {
			return fmt.Errorf("leader's ISR %v, want %v", isr, all)
		}
		if hw := lp.HighWatermark(); hw < leaderLEO {
			return fmt.Errorf("HW %d, leader LEO %d", hw, leaderLEO)
		}
		return nil
	})
	if _, delivered := loss.counts(); delivered == 0 {
		t.Fatal("the leader learned the ISR without a retried AlterPartition")
	}
	acks := c.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	produceAcked(ctx, t, acks, topic, "after", 10)
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical(topic, all...) })
}
