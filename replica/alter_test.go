package replica

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// expandingFixture leads t-0 with ISR {1,2} of replicas {1,2,3}, HW 2, and
// follower 3 caught up so that adding it to the ISR is pending (not sent).
func expandingFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, ZKVersion: 7})
	leo := f.produce(2)
	f.fetch(2, leo)
	f.fetch(3, leo)
	if hw := f.p.HighWatermark(); hw != leo {
		t.Fatalf("HW %d, want %d", hw, leo)
	}
	return f
}

// TestAlterPartitionUnansweredKeepsChange: an AlterPartition the
// controller applied but whose answer was lost must not drop the pending
// expansion. Were it dropped, the HW would advance on the old ISR {1,2}
// while the controller's ISR {1,2,3} makes 3 electable without the records
// acknowledged meanwhile. The change stays pending, the HW keeps counting
// 3 (maximal ISR) and the change is sent again.
func TestAlterPartitionUnansweredKeepsChange(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(*kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
	}{
		{"request failed", func(*kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
			return nil, context.DeadlineExceeded
		}},
		{"NOT_CONTROLLER", func(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
			resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
			resp.ErrorCode = kerr.NotController.Code
			return resp, nil
		}},
		{"partition missing from the answer", func(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
			return req.ResponseKind().(*kmsg.AlterPartitionResponse), nil
		}},
		{"unexpected partition error", refuseAll(kerr.UnknownServerError.Code)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := expandingFixture(t)
			hw := f.p.HighWatermark()
			f.cluster.answer = tt.answer
			if f.m.sendISRChanges(context.Background()) {
				t.Fatal("an unanswered change reported success")
			}
			leo := f.produce(3)
			f.fetch(2, leo)
			if got := f.p.HighWatermark(); got != hw {
				t.Fatalf("HW %d moved past follower 3 (at %d) while adding it may have been applied", got, hw)
			}
			f.cluster.answer = nil
			if !f.m.sendISRChanges(context.Background()) {
				t.Fatal("retry failed")
			}
			if n := len(f.cluster.alters); n != 2 || !slices.Equal(f.cluster.alters[1].Topics[0].Partitions[0].NewISR, []int32{1, 2, 3}) {
				t.Fatalf("%d requests, want the same change sent again", n)
			}
			if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2, 3}) || s.ZKVersion != 8 {
				t.Fatalf("after the retry: %+v", s)
			}
		})
	}
}

// TestAlterPartitionErrors follows Kafka's Partition.handleAlterPartitionError:
// OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA say the change was not
// applied, so the ISR returns to the committed one; errors that mean our
// state is stale keep the change pending, unsent, until a LeaderAndISR.
func TestAlterPartitionErrors(t *testing.T) {
	for _, tt := range []struct {
		err     *kerr.Error
		dropped bool
	}{
		{kerr.OperationNotAttempted, true},
		{kerr.IneligibleReplica, true},
		{kerr.FencedLeaderEpoch, false},
		{kerr.InvalidUpdateVersion, false},
		{kerr.UnknownTopicOrPartition, false},
		{kerr.UnknownTopicID, false},
		{kerr.InvalidRequest, false},
		{kerr.NewLeaderElected, false},
	} {
		t.Run(tt.err.Message, func(t *testing.T) {
			f := expandingFixture(t)
			hw := f.p.HighWatermark()
			f.cluster.answer = refuseAll(tt.err.Code)
			f.m.sendISRChanges(context.Background())
			leo := f.produce(3)
			f.fetch(2, leo)
			if tt.dropped {
				if got := f.p.HighWatermark(); got != leo {
					t.Fatalf("HW %d, want %d on the committed ISR {1,2}", got, leo)
				}
				f.cluster.answer = nil
				f.fetch(3, leo)
				f.m.sendISRChanges(context.Background())
				if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2, 3}) {
					t.Fatalf("follower 3 not proposed again: %+v", s)
				}
				return
			}
			if got := f.p.HighWatermark(); got != hw {
				t.Fatalf("HW %d moved past follower 3 (at %d) while the change is pending", got, hw)
			}
			f.cluster.answer = nil
			f.fetch(3, leo)
			f.m.sendISRChanges(context.Background())
			if n := len(f.cluster.alters); n != 1 {
				t.Fatalf("%d AlterPartition requests, want no retry before a LeaderAndISR", n)
			}
			// The controller's decision ends the wait.
			f.leaderAndISR(State{Leader: 1, LeaderEpoch: 6, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, ZKVersion: 9})
			if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2, 3}) || s.ZKVersion != 9 {
				t.Fatalf("after LeaderAndISR: %+v", s)
			}
			f.fetch(2, leo)
			f.fetch(3, leo)
			if got := f.p.HighWatermark(); got != leo {
				t.Fatalf("HW %d, want %d", got, leo)
			}
		})
	}
}

// TestAlterPartitionStaleAnswer: an accepted answer for an older leader
// epoch leaves the change pending, as Kafka's handleAlterPartitionUpdate.
func TestAlterPartitionStaleAnswer(t *testing.T) {
	f := expandingFixture(t)
	hw := f.p.HighWatermark()
	f.cluster.answer = func(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		resp := acceptAll(req)
		resp.Topics[0].Partitions[0].LeaderEpoch--
		return resp, nil
	}
	f.m.sendISRChanges(context.Background())
	leo := f.produce(1)
	f.fetch(2, leo)
	if got := f.p.HighWatermark(); got != hw {
		t.Fatalf("HW %d moved on a stale answer", got)
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2}) {
		t.Fatalf("stale answer applied: %+v", s)
	}
}

// TestAlterPartitionRetriedByRun: the manager's loop sends a change whose
// answer was lost again after replica.fetch.backoff.ms, and the
// controller's idempotent answer commits it.
func TestAlterPartitionRetriedByRun(t *testing.T) {
	f := expandingFixture(t)
	hw := f.p.HighWatermark()
	applied := false
	f.cluster.answer = func(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		if !applied {
			applied = true // the controller applied it; its answer is lost
			return nil, context.DeadlineExceeded
		}
		return acceptAll(req), nil
	}
	runManager(t, f.m)
	f.m.wakeISRSender()
	testutil.Eventually(t, 30*time.Second, func() error {
		if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2, 3}) {
			return fmt.Errorf("ISR %v after %d requests", s.ISR, f.cluster.requests())
		}
		return nil
	})
	if n := f.cluster.requests(); n != 2 {
		t.Fatalf("%d AlterPartition requests, want 2", n)
	}
	if got := f.p.HighWatermark(); got != hw {
		t.Fatalf("HW %d, want %d: follower 3 has not fetched more", got, hw)
	}
}

// TestHoldISRChangesWakesTheSenderAtRelease: an ISR change proposed while
// a follower's fetch is read wakes the sender only when the read ends, so
// that the changes one fetch proposes go out together; a release wakes it
// even while another fetch is still read, and without a hold a change
// wakes it at once.
func TestHoldISRChangesWakesTheSenderAtRelease(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ZKVersion: 7})
	woken := func() bool {
		select {
		case <-f.m.isrChanged:
			return true
		default:
			return false
		}
	}
	woken() // the LeaderAndISR's own proposals, if any
	release := f.m.HoldISRChanges()
	f.fetch(2, 0)
	if f.p.proposedISR == nil {
		t.Fatal("the caught-up follower was not proposed into the ISR")
	}
	if woken() {
		t.Fatal("the sender was woken while the fetch was read")
	}
	other := f.m.HoldISRChanges()
	release()
	if !woken() {
		t.Fatal("the sender was not woken when the fetch's read ended")
	}
	other()
	if woken() {
		t.Fatal("woken again with nothing proposed")
	}
	f.m.wakeISRSender()
	if !woken() {
		t.Fatal("a change proposed without a hold did not wake the sender")
	}
}
