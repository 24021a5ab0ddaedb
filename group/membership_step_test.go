package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

func startJoin(c *Coordinator, memberID string) *PendingJoin {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = 5, "g", memberID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 5_000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{}
	req.Protocols = append(req.Protocols, p)
	return c.StartJoinGroup(WithClientInfo(context.Background(), "c", "h"), req)
}

// TestMembershipSteps: the membership path without blocking, as the
// simulation drives it: a join waits in the rebalance until Tick passes
// the initial rebalance delay, the leader's SyncGroup waits for its write
// (Step appends it, the append's answer completes it), Tick expires a
// silent member, and member ids come from Config.NewMemberID.
func TestMembershipSteps(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	n := 0
	c := New(Config{NumPartitions: 1, Now: clock.Now, InitialRebalanceDelay: time.Second, MinSessionTimeout: time.Second,
		NewMemberID: func(prefix string) string { n++; return fmt.Sprintf("%s-%d", prefix, n) }})
	defer c.Close()
	p := &asyncPartition{memPartition: &memPartition{}}
	c.OnElected(0, 1, p)
	c.Step() // loads
	first := startJoin(c, "").Poll()
	if first == nil || first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID != "c-1" {
		t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with id c-1", first)
	}
	pj := startJoin(c, "c-1")
	if pj.Poll() != nil {
		t.Fatal("the join answered before the initial rebalance delay")
	}
	if next := c.Tick(); next.IsZero() || !next.After(clock.Now()) {
		t.Fatalf("Tick's next deadline %v, want the end of the delay", next)
	}
	clock.Advance(time.Second)
	c.Tick()
	join := pj.Poll()
	if join == nil || join.ErrorCode != 0 || join.Generation != 1 || join.LeaderID != "c-1" {
		t.Fatalf("join after the delay: %+v, want generation 1 led by c-1", join)
	}
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 3, "g", 1, "c-1"
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = "c-1", []byte("x")
	req.GroupAssignment = append(req.GroupAssignment, a)
	ps := c.StartSyncGroup(req)
	c.Step()
	if ps.Poll() != nil {
		t.Fatal("the sync answered before its write")
	}
	p.answer(t)
	if sync := ps.Poll(); sync == nil || sync.ErrorCode != 0 || string(sync.MemberAssignment) != "x" {
		t.Fatalf("sync: %+v, want the assignment", sync)
	}
	clock.Advance(11 * time.Second) // past the session timeout
	c.Tick()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.Generation, hb.MemberID = 3, "g", 1, "c-1"
	if code := c.Heartbeat(context.Background(), hb).ErrorCode; code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after the session timeout: %d, want UNKNOWN_MEMBER_ID", code)
	}
}
