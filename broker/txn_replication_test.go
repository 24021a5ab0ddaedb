package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestTransactionsReplicated runs transactions on a partition replicated
// three ways: markers go to the leader (a follower answers
// NOT_LEADER_OR_FOLLOWER), every replica ends with the same last stable
// offset and aborted transactions (followers build their .txnindex from
// the replicated markers), and after the leader stops, a read_committed
// consumer of the new leader gets exactly the committed records.
func TestTransactionsReplicated(t *testing.T) {
	c := startReplCluster(t)
	ctx := testContext(t)
	const topic = "rtxn"
	adm := kadm.NewClient(c.client())
	leader := c.createReplicated(ctx, adm, topic, nil)
	lb := c.brokers[leader]
	p := lb.leaderOf(topic, 0)
	var committed []string
	seq := map[int64]int32{}
	appendTxn := func(pid int64, values ...string) {
		t.Helper()
		if _, err := p.AppendAsLeader(txnRecords(t, pid, seq[pid], true, values...), 1, 1); err != nil {
			t.Fatal(err)
		}
		seq[pid] += int32(len(values))
	}
	// Markers reach the leader as a coordinator sends them: in-process on
	// the leader, over the inter-broker listener from another broker, and
	// from a raw client.
	senders := []int32{leader, leader%3 + 1, -1}
	end := func(pid int64, commit bool, values ...string) {
		t.Helper()
		from := senders[0]
		senders = append(senders[1:], from)
		var code int16
		if from < 0 {
			code = lb.writeMarker(pid, 0, 0, commit, topic, 0)[0]
		} else {
			resp, err := c.brokers[from].b.SendTxnMarkers(ctx, leader, markerRequest(pid, 0, 0, commit, topic, 0))
			if err != nil {
				t.Fatalf("markers from broker %d: %v", from, err)
			}
			code = resp.Markers[0].Topics[0].Partitions[0].ErrorCode
		}
		if code != 0 {
			t.Fatalf("marker from %d: %v", from, kerr.ErrorForCode(code))
		}
		if commit {
			committed = append(committed, values...)
		}
	}
	appendTxn(1, "a1", "a2")
	appendTxn(2, "b1")
	appendTxn(1, "a3")
	end(2, false)
	appendTxn(3, "c1")
	end(1, true, "a1", "a2", "a3")
	appendTxn(2, "b2")
	end(3, true, "c1")
	end(2, false)
	appendTxn(1, "a4") // left open: the LSO stays at it
	for id, tb := range c.brokers {
		if id == leader {
			continue
		}
		wantCode(t, fmt.Sprintf("marker to follower %d", id), tb.writeMarker(1, 0, 0, true, topic, 0)[0], kerr.NotLeaderForPartition)
	}
	// The open transaction holds the LSO once the ISR has its records.
	testutil.Eventually(t, 30*time.Second, func() error {
		if hw, leo := p.HighWatermark(), p.Log().LogEndOffset(); hw != leo {
			return fmt.Errorf("leader HW %d, LEO %d", hw, leo)
		}
		return nil
	})
	lso := p.LastStableOffset()
	aborted := p.Log().AbortedTransactions(0, p.Log().LogEndOffset())
	if len(aborted) != 2 || lso >= p.HighWatermark() {
		t.Fatalf("leader: LSO %d (HW %d), aborted %+v", lso, p.HighWatermark(), aborted)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		for id, tb := range c.brokers {
			r := tb.b.replicas.Get(topic, 0)
			if r == nil {
				return fmt.Errorf("broker %d does not host %s-0", id, topic)
			}
			if got := r.LastStableOffset(); got != lso {
				return fmt.Errorf("broker %d: LSO %d, leader %d", id, got, lso)
			}
			if got := r.Log().AbortedTransactions(0, r.Log().LogEndOffset()); !slices.Equal(got, aborted) {
				return fmt.Errorf("broker %d: aborted %+v, leader %+v", id, got, aborted)
			}
		}
		return nil
	})

	lb.stop()
	testutil.Eventually(t, 30*time.Second, func() error {
		l, _, err := c.partitionMeta(ctx, kadm.NewClient(c.client()), topic)
		if err != nil || l == leader || l < 0 {
			return fmt.Errorf("leader %d: %v", l, err)
		}
		return nil
	})
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < len(committed) {
		fs := cl.PollFetches(pctx)
		if err := pctx.Err(); err != nil {
			t.Fatalf("consumed %v, want %v: %v", got, committed, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, committed) {
		t.Fatalf("read_committed on the new leader: %v, want %v", got, committed)
	}
}
