package testutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrExited reports that the broker process ended before it became ready.
var ErrExited = errors.New("testutil: brook exited before answering ApiVersions")

// readyPoll is the pause between readiness probes.
const readyPoll = 50 * time.Millisecond

// waitReady polls addr with ApiVersions through a franz-go client until the
// broker answers without error, exited closes, or timeout passes.
func waitReady(addr string, exited <-chan struct{}, timeout time.Duration) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DialTimeout(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return readyPoll }),
	)
	if err != nil {
		return fmt.Errorf("readiness client for %s: %w", addr, err)
	}
	defer cl.Close()

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var lastErr error
	for {
		if lastErr = probe(cl); lastErr == nil {
			return nil
		}
		select {
		case <-exited:
			return ErrExited
		case <-deadline.C:
			return fmt.Errorf("brook at %s not ready after %v: %w", addr, timeout, lastErr)
		case <-tick.C:
		}
	}
}

func probe(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	if len(resp.ApiKeys) == 0 {
		return errors.New("ApiVersions: empty api_keys")
	}
	return nil
}
