package testutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEventuallyReturnsOnceConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, 10*time.Second, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
}

func TestEventuallyFailsWithLastError(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(rec, 50*time.Millisecond, func() error { return errors.New("still not there") })
	}()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !strings.Contains(rec.msg, "still not there") {
		t.Errorf("failure = %q, want the condition's last error", rec.msg)
	}
}

func TestPollReturnsLastErrorWithoutFailing(t *testing.T) {
	err := Poll(50*time.Millisecond, func() error { return errors.New("still not there") })
	if err == nil || !strings.Contains(err.Error(), "still not there") {
		t.Errorf("Poll = %v, want the condition's last error", err)
	}
	if err := Poll(10*time.Second, func() error { return nil }); err != nil {
		t.Errorf("Poll of a condition that holds = %v", err)
	}
}

func TestClientTalksToBroker(t *testing.T) {
	p := StartBrook(t, fakeBin, nil)
	cl := Client(t, p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions through Client: %v", err)
	}
	if len(resp.ApiKeys) == 0 {
		t.Error("ApiVersions answered no keys")
	}
}
