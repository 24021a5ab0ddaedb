package log

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

// crash abandons l as a kill -9 would: nothing is flushed, trimmed or
// snapshotted (closing leaves a discarded index file's content in place,
// indexFile.close). Background flushes are waited for so the test owns
// the files.
func crash(l *Log) {
	l.bg.Wait()
	l.closeSegments()
}

// writeModelLog appends n random batches and returns the model.
func writeModelLog(t *testing.T, l *Log, rng *rand.Rand, n int) []appended {
	t.Helper()
	var model []appended
	for i := 0; i < n; i++ {
		b := buildBatch(plainSpec(int64(1000+i)), nRecords(1+rng.IntN(4), rng.IntN(400)))
		model = append(model, mustAppend(t, l, b, int32(i/40)))
	}
	return model
}

// batchFileLayout maps each model batch to its segment file and position.
type batchLoc struct {
	file     string
	pos, end int64
}

func layout(dir string, model []appended) []batchLoc {
	var bases []int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if o, ok := parseOffsetFileName(e.Name(), logSuffix); ok {
			bases = append(bases, o)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	locs := make([]batchLoc, len(model))
	var pos int64
	cur := int64(-1)
	for i, m := range model {
		base := bases[sort.Search(len(bases), func(j int) bool { return bases[j] > m.first })-1]
		if base != cur {
			cur, pos = base, 0
		}
		locs[i] = batchLoc{file: offsetFileName(dir, base, logSuffix), pos: pos, end: pos + int64(len(m.data))}
		pos += int64(len(m.data))
	}
	return locs
}

// checkAgainstModel verifies that the log holds exactly model[:n] and that
// reads through the indexes find every batch.
func checkAgainstModel(t *testing.T, l *Log, model []appended) {
	t.Helper()
	want := int64(0)
	if len(model) > 0 {
		want = model[len(model)-1].last + 1
	}
	if got := l.LogEndOffset(); got != want {
		t.Fatalf("LEO %d, want %d", got, want)
	}
	for _, m := range model {
		for _, off := range []int64{m.first, m.last} {
			s, err := l.Read(off, 1, math.MaxInt64, true)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			if got := readAllSlice(t, s); !bytes.Equal(got, m.data) {
				t.Fatalf("read %d: got %d bytes, want batch %d..%d (%d bytes)", off, len(got), m.first, m.last, len(m.data))
			}
		}
	}
	checkIndexesAgree(t, l)
}

// checkIndexesAgree compares every index entry with a linear scan of the
// segment: each offset entry must point at the start of the batch whose
// last offset it names, and time entries must name batches' last offsets.
func checkIndexesAgree(t *testing.T, l *Log) {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	var hdr [batch.HeaderSize]byte
	for _, s := range l.segments {
		starts := map[int64]int64{} // position -> last offset
		lasts := map[int64]bool{}
		maxTs := int64(-1)
		for pos := int64(0); pos < s.size; {
			h, err := s.readHeaderAt(hdr[:], pos, s.size)
			if err != nil {
				t.Fatalf("segment %d scan: %v", s.baseOffset, err)
			}
			starts[pos] = h.LastOffset()
			lasts[h.LastOffset()] = true
			maxTs = max(maxTs, h.MaxTimestamp)
			pos += int64(h.Size())
		}
		for i := range s.index.rel {
			pos := int64(s.index.pos[i])
			if last, ok := starts[pos]; !ok || last != s.baseOffset+int64(s.index.rel[i]) {
				t.Fatalf("segment %d index entry %d (%d, %d) does not match a batch", s.baseOffset, i, s.index.rel[i], pos)
			}
		}
		for i := range s.timeIndex.rel {
			if !lasts[s.baseOffset+int64(s.timeIndex.rel[i])] || s.timeIndex.ts[i] > maxTs {
				t.Fatalf("segment %d time index entry %d (%d, %d) does not match a batch", s.baseOffset, i, s.timeIndex.ts[i], s.timeIndex.rel[i])
			}
		}
		if s.size > 0 && s.maxTimestamp != maxTs {
			t.Fatalf("segment %d max timestamp %d, scan says %d", s.baseOffset, s.maxTimestamp, maxTs)
		}
	}
}

// TestRecoveryAfterDamage cuts a segment at a random byte, or flips a
// random byte inside the CRC-covered or framing part of a batch, then
// reopens after an unclean stop: the log must end at the last intact batch
// before the damage, keep everything before it, and have indexes that
// agree with the data.
func TestRecoveryAfterDamage(t *testing.T) {
	for seed := uint64(0); seed < 25; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		dir := filepath.Join(t.TempDir(), "t-0")
		clock := newManualClock()
		cfg := smallConfig()
		l := openTestLog(t, dir, cfg, clock, Options{})
		model := writeModelLog(t, l, rng, 60+rng.IntN(60))
		crash(l)
		locs := layout(dir, model)
		victim := rng.IntN(len(model))
		loc := locs[victim]
		var keep int
		if rng.IntN(2) == 0 {
			// Cut inside the victim batch (possibly at its first byte).
			cut := loc.pos + rng.Int64N(loc.end-loc.pos)
			if err := os.Truncate(loc.file, cut); err != nil {
				t.Fatal(err)
			}
			keep = victim
		} else {
			// Flip a byte the format can detect: batchLength or anything
			// from the magic on (baseOffset and leader epoch are outside
			// the CRC, as in Kafka).
			off := loc.pos + 8 + rng.Int64N(loc.end-loc.pos-8)
			if off >= loc.pos+12 && off < loc.pos+16 {
				off = loc.pos + 16
			}
			f, err := os.OpenFile(loc.file, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			var b [1]byte
			f.ReadAt(b[:], off)
			b[0] ^= byte(1 + rng.IntN(255))
			f.WriteAt(b[:], off)
			f.Close()
			keep = victim
		}
		l2 := openTestLog(t, dir, cfg, clock, Options{})
		checkAgainstModel(t, l2, model[:keep])
		// The log stays appendable and the appended batch is readable.
		next := mustAppend(t, l2, buildBatch(plainSpec(5000), nRecords(2, 10)), 9)
		full := append(model[:keep:keep], next)
		checkAgainstModel(t, l2, full)
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
		// A clean start afterwards trusts the rebuilt indexes.
		l3 := openTestLog(t, dir, cfg, clock, Options{CleanShutdown: true, RecoveryPoint: next.last + 1})
		checkAgainstModel(t, l3, full)
		if err := l3.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoveryRebuildsDeletedIndexes removes index files and garbles
// others; reopening rebuilds them from the data.
func TestRecoveryRebuildsIndexes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	clock := newManualClock()
	cfg := smallConfig()
	l := openTestLog(t, dir, cfg, clock, Options{})
	model := writeModelLog(t, l, rand.New(rand.NewPCG(3, 3)), 100)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		switch {
		case filepath.Ext(p) == indexSuffix && n%2 == 0:
			os.Remove(p)
			n++
		case filepath.Ext(p) == indexSuffix:
			os.WriteFile(p, []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 2}, 0o644)
			n++
		case filepath.Ext(p) == timeIndexSuffix && n%3 == 0:
			os.WriteFile(p, []byte{1, 2, 3}, 0o644)
		}
	}
	// Even with a clean shutdown, damaged indexes are caught.
	l2 := openTestLog(t, dir, cfg, clock, Options{CleanShutdown: true, RecoveryPoint: model[len(model)-1].last + 1})
	checkAgainstModel(t, l2, model)
	want := indexFileImages(l2)
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	for name, img := range want {
		got, err := os.ReadFile(name)
		if err != nil || !bytes.Equal(got, img) {
			t.Fatalf("%s on disk (%d bytes) differs from the rebuilt entries (%d bytes): %v", filepath.Base(name), len(got), len(img), err)
		}
	}
}

// indexFileImages renders what each index file must hold once trimmed:
// the in-memory entries, plus the final time index entry a close adds.
func indexFileImages(l *Log) map[string][]byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := map[string][]byte{}
	for i, s := range l.segments {
		var ix, tx []byte
		for j := range s.index.rel {
			ix = binary.BigEndian.AppendUint32(ix, s.index.rel[j])
			ix = binary.BigEndian.AppendUint32(ix, s.index.pos[j])
		}
		ts, rel := s.timeIndex.ts, s.timeIndex.rel
		if i == len(l.segments)-1 && s.maxTimestamp >= 0 && (len(ts) == 0 || ts[len(ts)-1] < s.maxTimestamp) {
			ts = append(append([]int64(nil), ts...), s.maxTimestamp)
			rel = append(append([]uint32(nil), rel...), uint32(s.maxTimestampOffset-s.baseOffset))
		}
		for j := range ts {
			tx = binary.BigEndian.AppendUint64(tx, uint64(ts[j]))
			tx = binary.BigEndian.AppendUint32(tx, rel[j])
		}
		out[offsetFileName(l.dir, s.baseOffset, indexSuffix)] = ix
		out[offsetFileName(l.dir, s.baseOffset, timeIndexSuffix)] = tx
	}
	return out
}

// TestCleanShutdownReopen checks that a clean reopen restores the same
// state without a scan and keeps the producer and epoch state.
func TestCleanShutdownReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	clock := newManualClock()
	cfg := smallConfig()
	l := openTestLog(t, dir, cfg, clock, Options{})
	model := writeModelLog(t, l, rand.New(rand.NewPCG(4, 4)), 100)
	spec := batchSpec{baseTimestamp: 1, producerID: 77, producerEpoch: 0, baseSequence: 0}
	idem := buildBatch(spec, nRecords(3, 10))
	first, err := l.Append(idem, 3)
	if err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, cfg, clock, Options{CleanShutdown: true, RecoveryPoint: leo})
	defer l2.Close()
	model = append(model, appended{first: first.FirstOffset, last: first.LastOffset, data: idem})
	if l2.RecoveryPoint() != leo {
		t.Fatalf("recovery point %d, want %d", l2.RecoveryPoint(), leo)
	}
	checkAgainstModel(t, l2, model)
	dup, err := l2.Append(buildBatch(spec, nRecords(3, 10)), 3)
	if err != nil || !dup.Duplicate || dup.FirstOffset != first.FirstOffset {
		t.Fatalf("duplicate after reopen: %+v, %v", dup, err)
	}
	if e, o := l2.EndOffsetForEpoch(2); e != 2 || o != first.FirstOffset {
		t.Fatalf("EndOffsetForEpoch(2) = %d, %d; want 2, %d (where epoch 3 starts)", e, o, first.FirstOffset)
	}
}

// TestProducerStateRebuiltAfterCrash: no snapshot covers the tail, so
// recovery replays it.
func TestProducerStateRebuiltAfterCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	clock := newManualClock()
	cfg := smallConfig()
	l := openTestLog(t, dir, cfg, clock, Options{})
	spec := batchSpec{baseTimestamp: 1, producerID: 5, producerEpoch: 2}
	for i := 0; i < 50; i++ {
		spec.baseSequence = int32(i * 3)
		mustAppend(t, l, buildBatch(spec, nRecords(3, 300)), 0)
	}
	crash(l)
	// A damaged snapshot is dropped and an older one or a full replay used.
	snaps, _ := listSnapshots(OSFS{}, dir)
	if len(snaps) < 2 {
		t.Fatalf("expected snapshots at rolls, got %v", snaps)
	}
	os.WriteFile(offsetFileName(dir, snaps[len(snaps)-1], snapshotSuffix), []byte("BRPS garbage"), 0o644)
	l2 := openTestLog(t, dir, cfg, clock, Options{})
	defer l2.Close()
	spec.baseSequence = 49 * 3
	dup, err := l2.Append(buildBatch(spec, nRecords(3, 300)), 0)
	if err != nil || !dup.Duplicate || dup.FirstOffset != 49*3 {
		t.Fatalf("last batch not recognised as duplicate: %+v, %v", dup, err)
	}
	spec.baseSequence = 51 * 3
	if _, err := l2.Append(buildBatch(spec, nRecords(3, 300)), 0); err == nil {
		t.Fatal("sequence gap accepted after recovery")
	}
	spec.baseSequence = 50 * 3
	if _, err := l2.Append(buildBatch(spec, nRecords(3, 300)), 0); err != nil {
		t.Fatalf("next sequence rejected after recovery: %v", err)
	}
}
