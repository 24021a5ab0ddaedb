package log

import (
	"errors"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

// TestConcurrentAppendReadRetention runs one appender, several readers and
// a retention/deletion loop at once. Readers must only ever see whole,
// CRC-valid batches that start at or before the offset asked for.
func TestConcurrentAppendReadRetention(t *testing.T) {
	clock := newManualClock()
	cfg := smallConfig()
	cfg.RetentionBytes = 64 << 10
	cfg.RetentionMs = -1
	cfg.FileDeleteDelayMs = 60000 // the clock never moves: deleted files stay readable
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	const batches = 400
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			var buf []byte
			for i := 0; !done.Load(); i++ {
				leo := l.LogEndOffset()
				if leo == 0 {
					continue
				}
				start := l.LogStartOffset()
				off := start + int64(i*7+r)%max(leo-start, 1)
				s, err := l.Read(off, 4096, math.MaxInt64, true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					fail(err)
					return
				}
				buf, err = s.ReadInto(buf[:0])
				if err != nil {
					fail(err)
					return
				}
				first := true
				for len(buf) > 0 {
					h, err := batch.ParseHeader(buf)
					if err == nil {
						err = batch.CheckCRC(buf, &h)
					}
					if err != nil {
						fail(err)
						return
					}
					if first && (h.BaseOffset > off || h.LastOffset() < off) {
						fail(errors.New("first batch does not contain the offset"))
						return
					}
					first = false
					buf = buf[h.Size():]
				}
			}
		}(r)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if _, err := l.DeleteOldSegments(); err != nil {
				fail(err)
				return
			}
			if err := l.deleteExpiredSegments(); err != nil {
				fail(err)
				return
			}
		}
	}()
	for i := 0; i < batches; i++ {
		info, err := l.Append(buildBatch(plainSpec(int64(i)), nRecords(3, 100)), 0)
		if err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(info.LastOffset + 1)
	}
	done.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if _, err := l.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 3*batches || l.Size() > cfg.RetentionBytes+cfg.SegmentBytes {
		t.Fatalf("LEO %d size %d", l.LogEndOffset(), l.Size())
	}
}
