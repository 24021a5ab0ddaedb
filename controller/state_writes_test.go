package controller

import (
	"context"
	"testing"

	"github.com/brook-mq/brook/controller/store"
)

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
