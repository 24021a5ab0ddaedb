package replica

import (
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// follower hosts t-0 on broker 2 following broker 1, its fetcher not
// running, with values appended in epoch 1 (offsets 0..n-1).
func follower(t *testing.T, values ...string) *Partition {
	t.Helper()
	f := newFixtureAs(t, 2, &fakeCluster{}, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, f.p.Log(), 1, values...)
	return f.p
}

// epochBatch is one record at offset in epoch, as a leader's Fetch answer carries it.
func epochBatch(t *testing.T, offset int64, epoch int32) []byte {
	t.Helper()
	b, err := batch.Build(batch.BuildOptions{BaseOffset: offset, PartitionLeaderEpoch: epoch, BaseTimestamp: 1}, []batch.Record{{Value: []byte("x")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestApplyFetched: what a follower does with one partition of a Fetch
// answer, the step the fetcher and the simulation share.
func TestApplyFetched(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	answer := func(code int16, hw, logStart int64, records []byte) *kmsg.FetchResponseTopicPartition {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.ErrorCode, rp.HighWatermark, rp.LogStartOffset, rp.RecordBatches = code, hw, logStart, records
		return &rp
	}
	oor := kerr.OffsetOutOfRange.Code

	t.Run("out of range below the leader's log start starts over there", func(t *testing.T) {
		p := follower(t, "a", "b", "c", "d")
		if got := p.ApplyFetched(answer(oor, 12, 10, nil), 1, quiet); got != (FollowerStep{}) {
			t.Fatalf("step %+v", got)
		}
		if l := p.Log(); l.LogStartOffset() != 10 || l.LogEndOffset() != 10 {
			t.Fatalf("log start %d end %d, want both 10", l.LogStartOffset(), l.LogEndOffset())
		}
	})
	t.Run("out of range past the leader's HW cuts to it", func(t *testing.T) {
		p := follower(t, "a", "b", "c", "d")
		if got := p.ApplyFetched(answer(oor, 2, 0, nil), 1, quiet); got != (FollowerStep{}) {
			t.Fatalf("step %+v", got)
		}
		if leo := p.Log().LogEndOffset(); leo != 2 {
			t.Fatalf("LEO %d, want the leader's HW 2", leo)
		}
	})
	t.Run("out of range otherwise asks where the logs diverge", func(t *testing.T) {
		p := follower(t, "a", "b", "c", "d")
		if got := p.ApplyFetched(answer(oor, 4, 0, nil), 1, quiet); got != (FollowerStep{Truncate: true}) {
			t.Fatalf("step %+v", got)
		}
		if leo := p.Log().LogEndOffset(); leo != 4 {
			t.Fatalf("LEO %d, want 4 kept", leo)
		}
	})
	t.Run("another error backs off", func(t *testing.T) {
		p := follower(t, "a")
		if got := p.ApplyFetched(answer(kerr.FencedLeaderEpoch.Code, 1, 0, nil), 1, quiet); got != (FollowerStep{Backoff: true}) {
			t.Fatalf("step %+v", got)
		}
	})
	t.Run("records are appended and the HW followed", func(t *testing.T) {
		p := follower(t, "a", "b")
		got := p.ApplyFetched(answer(0, 3, 0, epochBatch(t, 2, 2)), 1, quiet)
		if got != (FollowerStep{HighWatermarkKnown: true, InSync: true}) {
			t.Fatalf("step %+v", got)
		}
		if l := p.Log(); l.LogEndOffset() != 3 || l.HighWatermark() != 3 || l.LeaderEpochAt(2) != 2 {
			t.Fatalf("LEO %d HW %d epoch at 2 %d, want 3, 3, 2", l.LogEndOffset(), l.HighWatermark(), l.LeaderEpochAt(2))
		}
	})
	t.Run("a HW past the log end is clamped and not in sync", func(t *testing.T) {
		p := follower(t, "a", "b")
		got := p.ApplyFetched(answer(0, 5, 0, nil), 1, quiet)
		if got != (FollowerStep{HighWatermarkKnown: true}) {
			t.Fatalf("step %+v", got)
		}
		if hw := p.Log().HighWatermark(); hw != 2 {
			t.Fatalf("HW %d, want the LEO 2", hw)
		}
	})
	t.Run("the leader's log start is followed up to the HW", func(t *testing.T) {
		p := follower(t, "a", "b", "c", "d")
		p.ApplyFetched(answer(0, 2, 3, nil), 1, quiet)
		if ls := p.Log().LogStartOffset(); ls != 2 {
			t.Fatalf("log start %d, want 2 (the leader's 3, bounded by the HW)", ls)
		}
	})
	t.Run("records the log refuses back off", func(t *testing.T) {
		p := follower(t, "a", "b")
		got := p.ApplyFetched(answer(0, 2, 0, epochBatch(t, 0, 1)), 1, quiet)
		if got != (FollowerStep{Backoff: true}) {
			t.Fatalf("step %+v", got)
		}
		if leo := p.Log().LogEndOffset(); leo != 2 {
			t.Fatalf("LEO %d, want 2", leo)
		}
	})
}

// TestFollowerTruncationSteps: where a truncation starts and what an
// OffsetForLeaderEpoch answer does, the steps the fetcher and the
// simulation share.
func TestFollowerTruncationSteps(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	t.Run("a log without epochs is cut to its HW", func(t *testing.T) {
		p := follower(t)
		if epoch, step := p.TruncationEpoch(quiet); epoch != -1 || step != (FollowerStep{}) {
			t.Fatalf("epoch %d step %+v", epoch, step)
		}
	})
	t.Run("a log with epochs asks for its latest", func(t *testing.T) {
		p := follower(t, "a")
		if epoch, step := p.TruncationEpoch(quiet); epoch != 1 || step != (FollowerStep{Truncate: true}) {
			t.Fatalf("epoch %d step %+v", epoch, step)
		}
	})
	answer := func(code int16, epoch int32, end int64) *kmsg.OffsetForLeaderEpochResponseTopicPartition {
		rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
		rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = code, epoch, end
		return &rp
	}
	t.Run("an error backs off and truncates later", func(t *testing.T) {
		p := follower(t, "a")
		if got := p.ApplyEpochAnswer(answer(kerr.NotLeaderForPartition.Code, -1, -1), quiet); got != (FollowerStep{Truncate: true, Backoff: true}) {
			t.Fatalf("step %+v", got)
		}
	})
	t.Run("the tail past the leader's end of the epoch is cut", func(t *testing.T) {
		p := follower(t, "a", "b", "c", "d")
		if got := p.ApplyEpochAnswer(answer(0, 1, 2), quiet); got != (FollowerStep{}) {
			t.Fatalf("step %+v", got)
		}
		if leo := p.Log().LogEndOffset(); leo != 2 {
			t.Fatalf("LEO %d, want 2", leo)
		}
	})
}
