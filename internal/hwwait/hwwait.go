// Package hwwait is the coordinators' wait for a loaded partition's high
// watermark. The group and transaction coordinators read their partition
// to its log end at election but act on what they read only once the HW
// has reached that end (group/load.go, txn/load.go say why); both wait
// the same way, so the loop lives here once.
package hwwait

import (
	"context"
	"log/slog"
	"time"
)

// RetryAfter is the pause after a failed wait: the broker no longer leads
// the partition and its resignation, which ends ctx, is on its way.
const RetryAfter = time.Second

// Waiting logs that a load of what (partition) read to end while the HW
// is hw, so that the coordinator waits before acting on it; both drivers
// of both coordinators say it the same way.
func Waiting(log *slog.Logger, what string, partition int32, end, hw int64) {
	log.Info(what+" loaded above the high watermark; waiting for it", "partition", partition, "end", end, "high_watermark", hw)
}

// Until calls wait(ctx, end) until it succeeds, pausing RetryAfter after
// each failure (logged at Warn with what, naming the partition). It
// reports false once ctx has ended, true once the HW has reached end.
func Until(ctx context.Context, end int64, wait func(context.Context, int64) error, log *slog.Logger, what string, partition int32) bool {
	for {
		err := wait(ctx, end)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			return true
		}
		log.Warn("wait for the high watermark of the "+what, "partition", partition, "end", end, "err", err)
		t := time.NewTimer(RetryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}
