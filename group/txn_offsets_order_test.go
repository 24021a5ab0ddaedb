package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnOffsetAgainstPlainCommitLogOrder: when a transaction's offsets
// are committed by its marker, each partition takes the transactional
// offset only if its record is later in the log than the group's current
// offset, as Kafka's completePendingTxnOffsetCommit does; a plain
// OffsetCommit written after the transactional one (and before the
// marker) wins. The reloaded coordinator agrees.
func TestTxnOffsetAgainstPlainCommitLogOrder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		plainLast bool
		want      int64
	}{
		{"plain commit after the transactional one wins", true, 20},
		{"transactional commit after the plain one wins", false, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			plain := func() {
				if code := e.commit(2, "g", "", -1, "t", 0, 20, ""); code != 0 {
					t.Fatalf("plain commit: %v", kerr.ErrorForCode(code))
				}
			}
			if !tc.plainLast {
				plain()
			}
			if code := e.txnCommit(7, 10); code != 0 {
				t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
			}
			if tc.plainLast {
				plain()
			}
			if _, err := e.p.Append(e.ctx, controlBatch(t, 7, 0, true)); err != nil {
				t.Fatal(err)
			}
			e.c.OnTxnMarker(0, 7, true)
			if o, code := e.stableOffset(); code != 0 || o != tc.want {
				t.Fatalf("after the marker: offset %d %v, want %d", o, kerr.ErrorForCode(code), tc.want)
			}
			e.restart()
			if o, code := e.stableOffset(); code != 0 || o != tc.want {
				t.Fatalf("after reload: offset %d %v, want %d", o, kerr.ErrorForCode(code), tc.want)
			}
		})
	}
}

// TestDeleteGroupDropsPendingTxnOffsets: deleting a group drops the
// transactional offsets pending for it, as Kafka drops the group with
// them: the group's name is free of UNSTABLE_OFFSET_COMMIT, and the
// transaction's later commit marker does not bring the offsets back, live
// or after a reload.
func TestDeleteGroupDropsPendingTxnOffsets(t *testing.T) {
	e := newEnv(t)
	if code := e.txnCommit(7, 10); code != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = 2
	req.Groups = []string{"g"}
	if code := e.c.DeleteGroups(e.ctx, req).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete group: %v", kerr.ErrorForCode(code))
	}
	if o, code := e.stableOffset(); code != 0 || o != -1 {
		t.Fatalf("deleted group: offset %d %v, want none and stable", o, kerr.ErrorForCode(code))
	}
	// A new group of the same name owes nothing to the old one.
	if code := e.commit(2, "g", "", -1, "t", 0, 5, ""); code != 0 {
		t.Fatalf("plain commit: %v", kerr.ErrorForCode(code))
	}
	if o, code := e.stableOffset(); code != 0 || o != 5 {
		t.Fatalf("new group: offset %d %v, want 5 and stable", o, kerr.ErrorForCode(code))
	}
	if _, err := e.p.Append(e.ctx, controlBatch(t, 7, 0, true)); err != nil {
		t.Fatal(err)
	}
	e.c.OnTxnMarker(0, 7, true)
	if o, code := e.stableOffset(); code != 0 || o != 5 {
		t.Fatalf("after the marker: offset %d %v, want 5", o, kerr.ErrorForCode(code))
	}
	e.restart()
	if o, code := e.stableOffset(); code != 0 || o != 5 {
		t.Fatalf("after reload: offset %d %v, want 5", o, kerr.ErrorForCode(code))
	}
}
