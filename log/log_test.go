package log

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

// modelRead is the naive answer to Read: whole batches from the one holding
// offset, within one segment, below maxOffset, within maxBytes.
func modelRead(batches []appended, segBase func(int64) int64, offset int64, maxBytes int32, maxOffset int64, minOne bool) []byte {
	var out []byte
	started := false
	var seg int64
	for _, b := range batches {
		if b.last < offset {
			continue
		}
		if !started {
			seg = segBase(b.first)
		} else if segBase(b.first) != seg {
			break
		}
		if b.last >= maxOffset {
			break
		}
		if len(out)+len(b.data) > int(maxBytes) && !(!started && minOne) {
			break
		}
		out = append(out, b.data...)
		started = true
	}
	return out
}

func segmentBaseFunc(l *Log) func(int64) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var bases []int64
	for _, s := range l.segments {
		bases = append(bases, s.baseOffset)
	}
	return func(o int64) int64 {
		var b int64
		for _, x := range bases {
			if x <= o {
				b = x
			}
		}
		return b
	}
}

func TestAppendAssignsContiguousOffsets(t *testing.T) {
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), clock, Options{})
	defer l.Close()
	want := int64(0)
	for i, n := range []int{1, 3, 10, 1, 7} {
		info, err := l.Append(buildBatch(plainSpec(1000), nRecords(n, 10)), 5)
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != want || info.LastOffset != want+int64(n)-1 || info.RecordCount != int32(n) || info.LogAppendTime != -1 {
			t.Fatalf("batch %d: got %+v, want first %d last %d", i, info, want, want+int64(n)-1)
		}
		want += int64(n)
	}
	if got := l.LogEndOffset(); got != want {
		t.Fatalf("LEO %d, want %d", got, want)
	}
	if e, o := l.EndOffsetForEpoch(5); e != 5 || o != want {
		t.Fatalf("EndOffsetForEpoch(5) = %d, %d", e, o)
	}
}

func TestAppendRejects(t *testing.T) {
	valid := func() []byte { return buildBatch(plainSpec(1), nRecords(2, 10)) }
	cases := []struct {
		name string
		cfg  func(*Config)
		b    func() []byte
		want error
	}{
		{"too large", func(c *Config) { c.MaxMessageBytes = 50 }, valid, ErrMessageTooLarge},
		{"bad crc", nil, func() []byte { b := valid(); b[len(b)-1] ^= 1; return b }, ErrCorrupt},
		{"bad crc is batch corrupt too", nil, func() []byte { b := valid(); b[len(b)-1] ^= 1; return b }, batch.ErrCorrupt},
		{"truncated", nil, func() []byte { return valid()[:40] }, batch.ErrTruncated},
		{"trailing bytes", nil, func() []byte { return append(valid(), 0) }, ErrInvalidRecord},
		{"trailing bytes keeps batch error", nil, func() []byte { return append(valid(), 0) }, batch.ErrInvalidRecord},
		{"magic 1", nil, func() []byte { b := valid(); b[16] = 1; return b }, ErrInvalidRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, newManualClock(), Options{})
			defer l.Close()
			_, err := l.Append(tc.b(), 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if l.LogEndOffset() != 0 {
				t.Fatalf("rejected batch moved LEO to %d", l.LogEndOffset())
			}
		})
	}
}

func TestLogAppendTime(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.LogAppendTime = true
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	info, err := l.Append(buildBatch(plainSpec(5), nRecords(3, 10)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.LogAppendTime != clock.Now().UnixMilli() {
		t.Fatalf("LogAppendTime %d, want %d", info.LogAppendTime, clock.Now().UnixMilli())
	}
	s, _ := l.Read(0, 1<<20, math.MaxInt64, true)
	b := readAllSlice(t, s)
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if !h.LogAppendTime() || h.MaxTimestamp != info.LogAppendTime || batch.CheckCRC(b, &h) != nil {
		t.Fatalf("stored header %+v not stamped with valid CRC", h)
	}
}

// TestReadMatchesModel appends random batches across many small segments
// and compares Read with the naive model for random arguments.
func TestReadMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), smallConfig(), clock, Options{})
	defer l.Close()
	var model []appended
	for i := 0; i < 300; i++ {
		model = append(model, mustAppend(t, l, buildBatch(plainSpec(int64(i)), nRecords(1+rng.IntN(5), rng.IntN(300))), 0))
	}
	if l.NumSegments() < 5 {
		t.Fatalf("expected many segments, got %d", l.NumSegments())
	}
	leo := l.LogEndOffset()
	segBase := segmentBaseFunc(l)
	for i := 0; i < 2000; i++ {
		off := rng.Int64N(leo)
		maxBytes := int32(rng.IntN(4000))
		maxOffset := off + rng.Int64N(leo-off+5)
		minOne := rng.IntN(2) == 0
		s, err := l.Read(off, maxBytes, maxOffset, minOne)
		if err != nil {
			t.Fatal(err)
		}
		got := readAllSlice(t, s)
		want := modelRead(model, segBase, off, maxBytes, maxOffset, minOne)
		if !bytes.Equal(got, want) {
			t.Fatalf("Read(%d, %d, %d, %v): got %d bytes, want %d", off, maxBytes, maxOffset, minOne, len(got), len(want))
		}
	}
}

func TestReadBounds(t *testing.T) {
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), newManualClock(), Options{})
	defer l.Close()
	b0 := mustAppend(t, l, buildBatch(plainSpec(1), nRecords(4, 100)), 0) // offsets 0..3
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(4, 100)), 0)       // offsets 4..7
	cases := []struct {
		name      string
		offset    int64
		maxBytes  int32
		maxOffset int64
		minOne    bool
		wantSize  int
		wantErr   error
	}{
		{"mid batch returns whole batch", 2, int32(len(b0.data)), 100, false, len(b0.data), nil},
		{"max bytes below batch, minOne", 0, 10, 100, true, len(b0.data), nil},
		{"max bytes below batch, not minOne", 0, 10, 100, false, 0, nil},
		{"both batches", 0, 10000, 100, false, 2 * len(b0.data), nil},
		{"hw cuts second batch", 0, 10000, 6, false, len(b0.data), nil},
		{"hw mid first batch", 0, 10000, 2, true, 0, nil},
		{"at LEO", 8, 10000, 100, true, 0, nil},
		{"past LEO", 9, 10000, 100, true, 0, ErrOffsetOutOfRange},
		{"negative", -1, 10000, 100, true, 0, ErrOffsetOutOfRange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := l.Read(tc.offset, tc.maxBytes, tc.maxOffset, tc.minOne)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if int(s.Size) != tc.wantSize {
				t.Fatalf("size %d, want %d", s.Size, tc.wantSize)
			}
		})
	}
}

func TestSegmentFilesAndIndexes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-with-dash-3")
	clock := newManualClock()
	cfg := smallConfig()
	l := openTestLog(t, dir, cfg, clock, Options{TopicID: [16]byte{1, 2, 3}})
	for i := 0; i < 100; i++ {
		mustAppend(t, l, buildBatch(plainSpec(int64(i)), nRecords(2, 200)), 1)
	}
	if tp := l.TopicPartition(); tp.Topic != "topic-with-dash" || tp.Partition != 3 {
		t.Fatalf("partition %+v", tp)
	}
	bases := []int64{}
	l.mu.RLock()
	for _, s := range l.segments {
		bases = append(bases, s.baseOffset)
	}
	l.mu.RUnlock()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, b := range bases {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			st, err := os.Stat(offsetFileName(dir, b, suf))
			if err != nil {
				t.Fatal(err)
			}
			if suf == indexSuffix && st.Size()%offsetEntrySize != 0 || suf == timeIndexSuffix && st.Size()%timeEntrySize != 0 {
				t.Fatalf("%d%s has size %d: not trimmed to entries", b, suf, st.Size())
			}
		}
		if b > 0 {
			if _, err := os.Stat(offsetFileName(dir, b, snapshotSuffix)); err != nil {
				t.Fatalf("no producer snapshot at roll %d: %v", b, err)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil || string(data) != "version: 0\ntopic_id: AQIDAAAAAAAAAAAAAAAAAA\n" {
		t.Fatalf("partition.metadata %q, %v", data, err)
	}
	data, err = os.ReadFile(filepath.Join(dir, leaderEpochCheckpointFile))
	if err != nil || string(data) != "0\n1\n1 0\n" {
		t.Fatalf("leader-epoch-checkpoint %q, %v", data, err)
	}
}
