package replica

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
)

// leaderCluster serves a follower's Fetch and OffsetForLeaderEpoch from a
// leader Partition in the same process, as the broker's handlers do.
type leaderCluster struct {
	leader *Partition
}

func (c *leaderCluster) AlterPartition(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return acceptAll(req), nil
}

func (c *leaderCluster) Request(ctx context.Context, _ int32, _ string, req kmsg.Request) (kmsg.Response, error) {
	p := c.leader
	switch r := req.(type) {
	case *kmsg.OffsetForLeaderEpochRequest:
		resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	case *kmsg.FetchRequest:
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		wake := make(chan struct{}, 1)
		defer p.WatchAppends(wake)()
		for _, rt := range r.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				if err := p.UpdateFollowerFetch(r.ReplicaID, r.ReplicaState.Epoch, rp.FetchOffset, rp.LogStartOffset); err != nil {
					return nil, err
				}
				l := p.Log()
				if rp.FetchOffset == l.LogEndOffset() {
					// Long poll, briefly, so the fetcher does not spin.
					select {
					case <-wake:
					case <-time.After(20 * time.Millisecond):
					case <-ctx.Done():
					}
				}
				s, err := l.Read(rp.FetchOffset, rp.PartitionMaxBytes, l.LogEndOffset(), true)
				if err != nil {
					sp.ErrorCode = kerr.OffsetOutOfRange.Code
				} else if sp.RecordBatches, err = s.ReadInto(nil); err != nil {
					return nil, err
				}
				sp.HighWatermark, sp.LogStartOffset = p.HighWatermark(), l.LogStartOffset()
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("unexpected %s", kmsg.NameForKey(req.Key()))
}

func appendEpoch(t *testing.T, l *log.Log, epoch int32, values ...string) {
	t.Helper()
	for _, v := range values {
		b, err := batch.Build(batch.BuildOptions{BaseTimestamp: 1}, []batch.Record{{Value: []byte(v)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, epoch); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFollowerTruncatesAndCatchesUp: a follower whose log has a tail the
// leader never had (written in epoch 1 by a former leader) cuts it with
// OffsetForLeaderEpoch, then copies the leader's log byte for byte and
// follows its HW, while the leader's HW advances with the follower's
// fetches.
func TestFollowerTruncatesAndCatchesUp(t *testing.T) {
	leader := newFixture(t, State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, leader.p.Log(), 1, "a", "b")
	appendEpoch(t, leader.p.Log(), 2, "c", "d", "e")

	follower := newFixtureAs(t, 2, &leaderCluster{leader: leader.p}, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, follower.p.Log(), 1, "a", "b", "divergent-1", "divergent-2")
	runManager(t, follower.m)
	follower.leaderAndISR(State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})

	testutil.Eventually(t, 10*time.Second, func() error {
		want, err := logBytes(leader.p.Log())
		if err != nil {
			return err
		}
		got, err := logBytes(follower.p.Log())
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("follower has %d bytes (LEO %d), leader %d (LEO %d)", len(got), follower.p.Log().LogEndOffset(), len(want), leader.p.Log().LogEndOffset())
		}
		if hw := leader.p.HighWatermark(); hw != 5 {
			return fmt.Errorf("leader HW %d", hw)
		}
		if hw := follower.p.HighWatermark(); hw != 5 {
			return fmt.Errorf("follower HW %d", hw)
		}
		return nil
	})
	// New records flow too.
	leader.produce(2)
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := follower.p.Log().LogEndOffset(); got != 7 {
			return fmt.Errorf("follower LEO %d", got)
		}
		return nil
	})
	// Becoming leader stops the fetcher: nothing more is appended.
	follower.leaderAndISR(State{Leader: 2, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{2}, ZKVersion: 2})
	leader.produce(1)
	if _, err := follower.p.AppendAsLeader(mustBatch(t), 1, 0); err != nil {
		t.Fatalf("append as the new leader: %v", err)
	}
	if got := follower.p.Log().LeaderEpochAt(7); got != 3 {
		t.Fatalf("offset 7 written in epoch %d, want the new leader's 3", got)
	}
}

func mustBatch(t *testing.T) []byte {
	t.Helper()
	b, err := batch.Build(batch.BuildOptions{BaseTimestamp: 1}, []batch.Record{{Value: []byte("x")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logBytes reads a whole local log.
func logBytes(l *log.Log) ([]byte, error) {
	leo := l.LogEndOffset()
	var out []byte
	for off := l.LogStartOffset(); off < leo; {
		s, err := l.Read(off, 1<<30, leo, true)
		if err != nil || s.Size == 0 {
			return nil, fmt.Errorf("read at %d: %v", off, err)
		}
		chunk, err := s.ReadInto(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, chunk...)
		for len(chunk) > 0 {
			h, err := batch.ParseHeader(chunk)
			if err != nil {
				return nil, err
			}
			off, chunk = h.LastOffset()+1, chunk[h.Size():]
		}
	}
	return out, nil
}

// firstRequestCluster records the partitions of the first request a
// fetcher sends and fails every request, so the fetcher keeps backing off.
type firstRequestCluster struct {
	fakeCluster // answers AlterPartition
	firstMu     sync.Mutex
	first       int // partitions in the first request; -1 until it came
}

func (c *firstRequestCluster) Request(_ context.Context, _ int32, _ string, req kmsg.Request) (kmsg.Response, error) {
	n := 0
	switch r := req.(type) {
	case *kmsg.OffsetForLeaderEpochRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
	case *kmsg.FetchRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
	}
	c.firstMu.Lock()
	if c.first < 0 {
		c.first = n
	}
	c.firstMu.Unlock()
	return nil, context.Canceled
}

// TestLeaderAndISRStartsFetchingAllItsPartitionsAtOnce: the first request
// to a leader carries every partition one LeaderAndISR made a follower of
// it. Added one at a time, the first fetch carried the few applied by then
// and the others waited for its long poll to end (replica.fetch.wait.max.ms).
func TestLeaderAndISRStartsFetchingAllItsPartitionsAtOnce(t *testing.T) {
	const parts = 200
	c := &firstRequestCluster{first: -1}
	f := newFixtureAs(t, 2, c, State{Leader: 2, LeaderEpoch: 0, Replicas: []int32{2, 1}, ISR: []int32{2, 1}})
	runManager(t, f.m)
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.SetVersion(5)
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "many", [16]byte{9}
	for i := range parts {
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition = ts.Topic, int32(i)
		ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas, ps.IsNew = 1, 1, []int32{1, 2}, []int32{1, 2}, true
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	f.m.ApplyLeaderAndISR(req)
	testutil.Eventually(t, 10*time.Second, func() error {
		c.firstMu.Lock()
		defer c.firstMu.Unlock()
		if c.first < 0 {
			return fmt.Errorf("no request sent yet")
		}
		return nil
	})
	c.firstMu.Lock()
	defer c.firstMu.Unlock()
	if c.first != parts {
		t.Fatalf("the first request to the leader carried %d partitions, want all %d", c.first, parts)
	}
}
