package group

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// runEnv runs the env's coordinator's timers until the test ends.
func runEnv(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitTimer waits until the coordinator's timer is armed for at.
func waitTimer(t *testing.T, e *env, at time.Time) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		if ts := e.clock.Timers(); !slices.ContainsFunc(ts, at.Equal) {
			return fmt.Errorf("timers armed for %v, want one for %v", ts, at)
		}
		return nil
	})
}

// TestStaticMemberExpiresAtDeadline: a static member that stops
// heartbeating leaves its group at its session timeout exactly, as Kafka's
// heartbeat purgatory removes it: the coordinator arms its timer for the
// deadline rather than polling.
func TestStaticMemberExpiresAtDeadline(t *testing.T) {
	e := newEnv(t)
	runEnv(t, e)
	start := e.clock.Now()
	inst := "static-1"
	e.stable("g", &inst) // session timeout 10s
	deadline := start.Add(10 * time.Second)
	waitTimer(t, e, deadline)

	e.clock.Advance(deadline.Sub(start) - time.Millisecond)
	if s := groupState(e, "g"); s != "Stable" {
		t.Fatalf("group %s a millisecond before the session deadline, want Stable", s)
	}
	e.clock.Advance(time.Millisecond)
	testutil.Eventually(t, 10*time.Second, func() error {
		if s := groupState(e, "g"); s != "Empty" {
			return fmt.Errorf("group %s at the session deadline, want Empty", s)
		}
		return nil
	})
}

// TestHeartbeatMovesTimer: a heartbeat pushes the member's deadline out,
// and the timer follows it instead of expiring the member at the old one.
func TestHeartbeatMovesTimer(t *testing.T) {
	e := newEnv(t)
	runEnv(t, e)
	start := e.clock.Now()
	member, gen := e.stable("g", nil)
	waitTimer(t, e, start.Add(10*time.Second))

	e.clock.Advance(5 * time.Second)
	hb := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 4, Group: "g", MemberID: member, Generation: gen})
	wantCode(t, "heartbeat", hb.ErrorCode, nil)
	e.clock.Advance(5 * time.Second) // the first deadline: the timer fires, nothing is due
	waitTimer(t, e, start.Add(15*time.Second))
	if s := groupState(e, "g"); s != "Stable" {
		t.Fatalf("group %s at the old deadline, want Stable", s)
	}
	e.clock.Advance(5 * time.Second)
	testutil.Eventually(t, 10*time.Second, func() error {
		if s := groupState(e, "g"); s != "Empty" {
			return fmt.Errorf("group %s at the new deadline, want Empty", s)
		}
		return nil
	})
}
