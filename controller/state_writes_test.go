package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/brook-mq/brook/controller/store"
)

// juteLimitStore refuses, as ZooKeeper does past jute.maxbuffer, a Multi
// whose estimated size passes limit, and records the largest it accepted.
type juteLimitStore struct {
	store.Store
	limit int
	mu    sync.Mutex
	multi int // Multi calls
	max   int // largest accepted, bytes
}

func (s *juteLimitStore) Multi(ctx context.Context, ops ...store.Op) error {
	n := 0
	for _, op := range ops {
		n += opSize(op)
	}
	s.mu.Lock()
	s.multi++
	if n <= s.limit {
		s.max = max(s.max, n)
	}
	s.mu.Unlock()
	if n > s.limit {
		return fmt.Errorf("request of %d bytes past jute.maxbuffer: connection closed", n)
	}
	return s.Store.Multi(ctx, ops...)
}

// TestStateWritesFitZooKeeperRequests: a controller that creates, then
// updates, the states of 12,000 partitions (a failover at 50,000
// partitions writes every one) does so in transactions ZooKeeper accepts,
// each fenced by the controller epoch, and every state lands. Before, the
// writes went in one transaction of some 1.5 MiB, which ZooKeeper refuses
// (the connection is closed and the controller retries for ever).
func TestStateWritesFitZooKeeperRequests(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	sess := db.NewSession()
	if _, err := sess.Create(ctx, ControllerEpochPath, []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := EnsureTopLevelPaths(ctx, sess); err != nil {
		t.Fatal(err)
	}
	st := &juteLimitStore{Store: sess, limit: 1 << 20}
	c := New(Config{BrokerID: 1}, st, newFakeSender())
	c.epochZkVersion = 0
	const topics, perTopic = 12, 1000
	var writes []StateWrite
	for i := range topics {
		if _, err := sess.Create(ctx, TopicPath(fmt.Sprintf("topic-%02d", i)), []byte("{}"), 0); err != nil {
			t.Fatal(err)
		}
		for p := range perTopic {
			tp := TP{Topic: fmt.Sprintf("topic-%02d", i), Partition: int32(p)}
			writes = append(writes, StateWrite{TP: tp, Create: true, State: PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2, 3}, ControllerEpoch: 1}})
		}
	}
	if err := c.writeStates(ctx, writes, nil); err != nil {
		t.Fatalf("create %d states: %v", len(writes), err)
	}
	for i := range writes {
		writes[i].Create, writes[i].ExpectedVersion = false, 0
		writes[i].State = PartitionState{Leader: 2, LeaderEpoch: 1, ISR: []int32{2, 3}, ControllerEpoch: 1}
	}
	if err := c.writeStates(ctx, writes, nil); err != nil {
		t.Fatalf("update %d states: %v", len(writes), err)
	}
	for _, w := range writes {
		data, stat, err := sess.Get(ctx, PartitionStatePath(w.TP.Topic, w.TP.Partition))
		if err != nil {
			t.Fatalf("%v: %v", w.TP, err)
		}
		ps, err := decodePartitionState(data, stat)
		if err != nil || ps.Leader != 2 || ps.LeaderEpoch != 1 || stat.Version != 1 {
			t.Fatalf("%v: state %+v (version %d), %v; want leader 2, epoch 1, version 1", w.TP, ps, stat.Version, err)
		}
	}
	if st.multi < 4 || st.max > maxMultiBytes {
		t.Fatalf("%d transactions, largest %d bytes: want several, each at most %d", st.multi, st.max, maxMultiBytes)
	}

	// Each chunk is fenced: once the epoch moves on, nothing is written.
	if _, err := sess.Set(ctx, ControllerEpochPath, []byte("2"), store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	for i := range writes {
		writes[i].ExpectedVersion = 1
	}
	if err := c.writeStates(ctx, writes, nil); err == nil {
		t.Fatal("writes of a deposed controller succeeded")
	}
	_, stat, err := sess.Get(ctx, PartitionStatePath(writes[len(writes)-1].TP.Topic, writes[len(writes)-1].TP.Partition))
	if err != nil || stat.Version != 1 {
		t.Fatalf("a deposed controller's write landed: version %d, %v", stat.Version, err)
	}
}

// TestChunkOps: every op once, in order, each chunk fenced by the check
// and within the budget unless a single op is larger.
func TestChunkOps(t *testing.T) {
	check := store.CheckOp{Path: ControllerEpochPath, Version: 3}
	ops := []store.Op{check}
	for i := range 500 {
		ops = append(ops, store.SetOp{Path: fmt.Sprintf("/p/%d", i), Data: make([]byte, i%97)})
	}
	ops = append(ops, store.SetOp{Path: "/big", Data: make([]byte, 5000)})
	chunks := chunkOps(ops, 2000)
	var flat []store.Op
	for i, ch := range chunks {
		if ch[0] != store.Op(check) {
			t.Fatalf("chunk %d starts with %v, not the epoch check", i, ch[0])
		}
		size := 0
		for _, op := range ch {
			size += opSize(op)
		}
		if size > 2000 && len(ch) > 2 {
			t.Fatalf("chunk %d is %d bytes with %d ops", i, size, len(ch))
		}
		flat = append(flat, ch[1:]...)
	}
	if len(flat) != len(ops)-1 {
		t.Fatalf("%d ops after chunking, want %d", len(flat), len(ops)-1)
	}
	for i, op := range flat {
		if op.(store.SetOp).Path != ops[i+1].(store.SetOp).Path {
			t.Fatalf("op %d out of order", i)
		}
	}
}

// existsCounter counts a store's Exists calls.
type existsCounter struct {
	store.Store
	calls int
}

func (c *existsCounter) Exists(ctx context.Context, path string) (bool, store.Stat, error) {
	c.calls++
	return c.Store.Exists(ctx, path)
}

// TestStateWriteOpsAsksOnlyAboutParentsThatMayExist: the state writes of
// a new topic's partitions ask the store once, whether the topic's
// partitions znode exists; a partition's znode cannot exist under one that
// does not. Partitions added to a topic that has them are each asked
// about. Either way the ops apply to the store as they are.
func TestStateWriteOpsAsksOnlyAboutParentsThatMayExist(t *testing.T) {
	ctx := context.Background()
	sess := testDB(t).NewSession()
	for _, p := range []string{"/brokers", TopicsPath, TopicPath("new"), TopicPath("old"), PartitionsPath("old"), PartitionPath("old", 0)} {
		if _, err := sess.Create(ctx, p, nil, 0); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	s := NewClusterState(1, 3)
	st := PartitionState{Leader: 1, ISR: []int32{1}, ControllerEpoch: 3}
	for _, tc := range []struct {
		name      string
		writes    []StateWrite
		wantCalls int
	}{
		{"new topic", []StateWrite{{TP: TP{"new", 0}, State: st, Create: true}, {TP: TP{"new", 1}, State: st, Create: true}, {TP: TP{"new", 2}, State: st, Create: true}}, 1},
		// Partition 0's znode exists (without a state), partition 1's not.
		{"partitions added", []StateWrite{{TP: TP{"old", 0}, State: st, Create: true}, {TP: TP{"old", 1}, State: st, Create: true}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := &existsCounter{Store: sess}
			ops, err := stateWriteOps(ctx, counter, 0, s, tc.writes, nil)
			if err != nil {
				t.Fatal(err)
			}
			if counter.calls != tc.wantCalls {
				t.Fatalf("%d Exists calls, want %d", counter.calls, tc.wantCalls)
			}
			// ops[0] checks the controller epoch's znode, absent here.
			if err := sess.Multi(ctx, ops[1:]...); err != nil {
				t.Fatalf("the ops do not apply: %v", err)
			}
			for _, w := range tc.writes {
				if ok, _, err := sess.Exists(ctx, PartitionStatePath(w.TP.Topic, w.TP.Partition)); err != nil || !ok {
					t.Fatalf("no state for %v after the ops (%v)", w.TP, err)
				}
			}
		})
	}
}
