package log_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/sim"
)

// TestPowerFailureLosesUnsyncedTailAndTruncatesTornBatch runs a log over
// the simulation's disk (sim.FS): batches flushed before a power failure
// survive it, the unsynced ones after may be lost, kept in part, or torn
// in the middle of a batch, and recovery (an Open without a clean
// shutdown) cuts the log back to its last whole batch. Over many seeds
// it must see a lost tail and a torn batch, and every recovered log must
// end on a batch boundary at or past the flush with the records as
// written.
func TestPowerFailureLosesUnsyncedTailAndTruncatesTornBatch(t *testing.T) {
	now := func() time.Time { return time.Unix(1_700_000_000, 0) }
	const dir = "/data/t-0"
	segment := dir + "/00000000000000000000.log"
	var lost, torn, kept int
	for seed := int64(1); seed <= 64; seed++ {
		disk := sim.NewFS(seed, now)
		fs := disk.Mount()
		l, err := log.Open(dir, log.DefaultConfig(), log.Options{FS: fs, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		// As a log dir at start-up: the partition directory's entry is
		// durable (the Manager syncs the log dir after loading it).
		for _, d := range []string{"/", "/data"} {
			if err := fs.SyncDir(d); err != nil {
				t.Fatal(err)
			}
		}
		var ends []int64 // log end offset after each append
		var positions []int64
		pos := int64(0)
		appendBatch := func(i int) {
			b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: now().UnixMilli()},
				[]batch.Record{{OffsetDelta: 0, Value: fmt.Appendf(nil, "v%03d", i)}, {OffsetDelta: 1, Value: fmt.Appendf(nil, "w%03d", i)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(b, 0); err != nil {
				t.Fatal(err)
			}
			pos += int64(len(b))
			ends, positions = append(ends, l.LogEndOffset()), append(positions, pos)
		}
		for i := range 3 {
			appendBatch(i)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		flushed := l.LogEndOffset()
		for i := 3; i < 8; i++ {
			appendBatch(i)
		}

		disk.Crash(true)
		fs = disk.Mount()
		st, err := fs.Stat(segment)
		if err != nil {
			t.Fatalf("seed %d: the flushed segment is gone: %v", seed, err)
		}
		size := st.Size()
		l, err = log.Open(dir, log.DefaultConfig(), log.Options{FS: fs, Now: now})
		if err != nil {
			t.Fatalf("seed %d: recover: %v", seed, err)
		}
		leo := l.LogEndOffset()
		whole := int64(0) // bytes of the whole batches the disk kept
		wholeEnd := int64(0)
		for i, p := range positions {
			if p <= size {
				whole, wholeEnd = p, ends[i]
			}
		}
		if leo != wholeEnd || leo < flushed {
			t.Fatalf("seed %d: recovered log end %d from a segment of %d bytes; whole batches end at %d (offset %d), flushed %d",
				seed, leo, size, whole, wholeEnd, flushed)
		}
		if st, err := fs.Stat(segment); err != nil || st.Size() != whole {
			t.Fatalf("seed %d: segment after recovery: %v, %v; want %d bytes", seed, st, err, whole)
		}
		for off := int64(0); off < leo; off++ {
			if got := readValue(t, l, off); got != fmt.Sprintf("%c%03d", "vw"[off%2], off/2) {
				t.Fatalf("seed %d: offset %d holds %q", seed, off, got)
			}
		}
		switch {
		case size != whole:
			torn++
		case leo == flushed:
			lost++
		default:
			kept++
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("64 power failures: %d lost the unsynced tail, %d tore a batch, %d kept whole batches of it", lost, torn, kept)
	if lost == 0 || torn == 0 {
		t.Fatalf("lost %d, torn %d: the power failures did not lose the tail or tear a batch", lost, torn)
	}
}

// readValue reads the value of the record at offset.
func readValue(t *testing.T, l *log.Log, offset int64) string {
	t.Helper()
	sl, err := l.Read(offset, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	data, err := sl.ReadInto(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.ParseHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := batch.ReadRecords(data[:h.Size()], nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(recs[offset-h.BaseOffset].Value)
}
