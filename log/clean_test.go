package log

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// compactConfig is a compacted topic with small segments, so that tests
// cross many segment boundaries, and a short delete.retention.ms.
func compactConfig() Config {
	c := smallConfig()
	c.SegmentBytes = 2 << 10
	c.IndexIntervalBytes = 256
	c.Compact, c.Delete = true, false
	c.DeleteRetentionMs = 1000
	c.MinCleanableDirtyRatio = 0.5
	return c
}

// kv is one record to append; a nil value is a tombstone.
type kv struct {
	key, value string
	tombstone  bool
}

// appendKVs appends recs in one batch with the given codec.
func appendKVs(t testing.TB, l *Log, nowMs int64, codec batch.Compression, recs ...kv) AppendInfo {
	t.Helper()
	out := make([]batch.Record, len(recs))
	for i, r := range recs {
		out[i] = batch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte(r.key)}
		if !r.tombstone {
			out[i].Value = []byte(r.value)
		}
	}
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, Compression: codec, BaseTimestamp: nowMs}, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := l.Append(b, 0)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	return info
}

// readRecord is one record of a full read.
type readRecord struct {
	offset     int64
	key, value string
	tombstone  bool
	horizon    int64 // the batch's delete horizon, -1 if none
}

// readAllRecords reads the whole log through Read, from the log start to
// the log end, checking that offsets strictly increase.
func readAllRecords(t testing.TB, l *Log) []readRecord {
	t.Helper()
	var out []readRecord
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		s, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if s.Size == 0 {
			t.Fatalf("read at %d returned nothing below the log end %d", off, l.LogEndOffset())
		}
		b := readAllSlice(t, s)
		for len(b) > 0 {
			h, recs, err := batch.ReadRecords(b, nil)
			if err != nil {
				t.Fatalf("read batch: %v", err)
			}
			if err := batch.CheckCRC(b, &h); err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset, err)
			}
			hz, ok := h.DeleteHorizonMs()
			if !ok {
				hz = -1
			}
			for _, r := range recs {
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o <= last {
					t.Fatalf("offset %d after %d", o, last)
				}
				last = o
				if r.Key == nil {
					t.Fatalf("record at %d has no key", o)
				}
				out = append(out, readRecord{offset: o, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil, horizon: hz})
			}
			if h.LastOffset() < off {
				t.Fatalf("batch %d..%d returned for offset %d", h.BaseOffset, h.LastOffset(), off)
			}
			off = h.LastOffset() + 1
			b = b[h.Size():]
		}
	}
	return out
}

// cleanNow cleans the log's whole dirty range whatever its ratio, with an
// offset map of mem bytes.
func cleanNow(t testing.TB, l *Log, mem int64) CleanStats {
	t.Helper()
	stats, err := cleanWith(l, newOffsetMap(mem, 0.9))
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return stats
}

func cleanWith(l *Log, m *offsetMap) (CleanStats, error) {
	l.mu.RLock()
	in := l.cleanInputLocked(l.now().UnixMilli())
	l.mu.RUnlock()
	c := cleanableRange(in)
	if c.CleanableBytes == 0 {
		return CleanStats{}, nil
	}
	return l.clean(cleanEnv{offsets: m}, c)
}

// checkIndexes compares every segment's offset and time index with a
// linear scan of its batches.
func checkIndexes(t testing.TB, l *Log) {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	var hdr [batch.HeaderSize]byte
	for _, s := range l.segments {
		starts := map[int64]int64{} // position -> last offset
		lastAt := map[int64]int64{} // last offset -> running max timestamp
		maxTs := int64(-1)
		next := s.baseOffset
		for pos := int64(0); pos < s.size; {
			h, err := s.readHeaderAt(hdr[:], pos, s.size)
			if err != nil {
				t.Fatalf("segment %d: scan at %d: %v", s.baseOffset, pos, err)
			}
			if h.BaseOffset < next {
				t.Fatalf("segment %d: batch at %d starts at %d, before %d", s.baseOffset, pos, h.BaseOffset, next)
			}
			next = h.LastOffset() + 1
			maxTs = max(maxTs, h.MaxTimestamp)
			starts[pos], lastAt[h.LastOffset()] = h.LastOffset(), maxTs
			pos += int64(h.Size())
		}
		if s.nextOffset != next {
			t.Fatalf("segment %d: next offset %d, scan says %d", s.baseOffset, s.nextOffset, next)
		}
		for i := range s.index.rel {
			o, p := s.baseOffset+int64(s.index.rel[i]), int64(s.index.pos[i])
			if got, ok := starts[p]; !ok || got != o {
				t.Fatalf("segment %d: index entry (%d, %d) names no batch ending there", s.baseOffset, o, p)
			}
		}
		for i := range s.timeIndex.ts {
			o := s.baseOffset + int64(s.timeIndex.rel[i])
			if got, ok := lastAt[o]; !ok || got != s.timeIndex.ts[i] {
				t.Fatalf("segment %d: time index entry (%d, %d), scan has max timestamp %d there", s.baseOffset, s.timeIndex.ts[i], o, got)
			}
		}
	}
}

// modelEntry is the latest write of a key.
type modelEntry struct {
	offset    int64
	value     string
	tombstone bool
}

// cleanerModel is the dumb model of a compacted log: the latest write per
// key, and the delete horizons the log reported for tombstones.
type cleanerModel struct {
	latest   map[string]modelEntry
	horizons map[string]int64
	cleaned  []int64 // times of cleanings
}

// check compares a full read with the model after a cleaning at nowMs
// that moved the checkpoint to end.
func (m *cleanerModel) check(t testing.TB, l *Log, deleteRetentionMs int64) {
	t.Helper()
	recs := readAllRecords(t, l)
	end := l.CleanerCheckpoint()
	lastOf := map[string]readRecord{}
	seenClean := map[string]bool{}
	for _, r := range recs {
		if r.offset < end {
			if seenClean[r.key] {
				t.Fatalf("key %q appears twice below the cleaner checkpoint %d", r.key, end)
			}
			seenClean[r.key] = true
		}
		lastOf[r.key] = r
	}
	for k, e := range m.latest {
		r, ok := lastOf[k]
		if !e.tombstone {
			if !ok || r.offset != e.offset || r.value != e.value || r.tombstone {
				t.Fatalf("key %q: read %+v (found %v), model has %+v", k, r, ok, e)
			}
			continue
		}
		if ok {
			if r.offset != e.offset || !r.tombstone {
				t.Fatalf("key %q: read %+v, model has a tombstone at %d", k, r, e.offset)
			}
			if r.horizon >= 0 {
				if h, seen := m.horizons[k]; seen && h != r.horizon {
					t.Fatalf("key %q: delete horizon moved from %d to %d", k, h, r.horizon)
				}
				if !m.cleanedAt(r.horizon - deleteRetentionMs) {
					t.Fatalf("key %q: horizon %d is no cleaning's time + delete.retention.ms", k, r.horizon)
				}
				m.horizons[k] = r.horizon
			}
			continue
		}
		// Gone: only after a cleaning past its horizon.
		h, seen := m.horizons[k]
		if !seen || l.now().UnixMilli() < h {
			t.Fatalf("key %q: tombstone at %d gone before its horizon (%d, known %v)", k, e.offset, h, seen)
		}
	}
	for k := range lastOf {
		if _, ok := m.latest[k]; !ok {
			t.Fatalf("key %q read but never written", k)
		}
	}
	checkIndexes(t, l)
}

func (m *cleanerModel) cleanedAt(ms int64) bool {
	for _, c := range m.cleaned {
		if c == ms {
			return true
		}
	}
	return false
}

func (m *cleanerModel) write(k kv, offset int64) {
	m.latest[k.key] = modelEntry{offset: offset, value: k.value, tombstone: k.tombstone}
	delete(m.horizons, k.key)
}

// TestCleanerAgainstModel appends random puts and deletes of few keys over
// many small segments, cleans at random moments with a small offset map
// (so that cleanings often stop where the map filled), and after each
// cleaning compares a full read with the model, then reopens the log and
// compares again. At the end, with the clock past every horizon, repeated
// cleanings leave exactly one record per live key and no tombstones.
func TestCleanerAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			clock := newManualClock()
			dir := filepath.Join(t.TempDir(), "compacted-0")
			cfg := compactConfig()
			l := openTestLog(t, dir, cfg, clock, Options{})
			defer func() { l.Close() }()
			m := &cleanerModel{latest: map[string]modelEntry{}, horizons: map[string]int64{}}
			codecs := []batch.Compression{batch.None, batch.None, batch.Gzip, batch.LZ4}
			mapBytes := int64(offsetMapEntrySize * (20 + rng.IntN(40)))
			for step := 0; step < 400; step++ {
				n := 1 + rng.IntN(4)
				recs := make([]kv, n)
				for i := range recs {
					recs[i] = kv{key: fmt.Sprintf("k%02d", rng.IntN(30)), value: fmt.Sprintf("v%d-%d-%s", step, i, strings.Repeat("x", rng.IntN(60)))}
					if rng.IntN(6) == 0 {
						recs[i].tombstone, recs[i].value = true, ""
					}
				}
				info := appendKVs(t, l, clock.Now().UnixMilli(), codecs[rng.IntN(len(codecs))], recs...)
				for i, r := range recs {
					m.write(r, info.FirstOffset+int64(i))
				}
				clock.Advance(time.Duration(rng.IntN(120)) * time.Millisecond)
				if rng.IntN(25) == 0 {
					m.cleaned = append(m.cleaned, clock.Now().UnixMilli())
					if _, err := cleanWith(l, newOffsetMap(mapBytes, 0.9)); err != nil {
						t.Fatalf("step %d: clean: %v", step, err)
					}
					m.check(t, l, cfg.DeleteRetentionMs)
					if err := l.deleteExpiredSegments(); err != nil {
						t.Fatal(err)
					}
				}
				if rng.IntN(100) == 0 {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					cp := l.CleanerCheckpoint()
					l = openTestLog(t, dir, cfg, clock, Options{CleanerCheckpoint: cp, CleanShutdown: true})
					l.SetHighWatermark(l.LogEndOffset())
					m.check(t, l, cfg.DeleteRetentionMs)
				}
			}
			// Roll so that every record is below the active segment, move
			// past every horizon, and clean until nothing is dirty.
			l.appendMu.Lock()
			if err := l.rollLocked(); err != nil {
				t.Fatal(err)
			}
			l.appendMu.Unlock()
			for round := 0; round < 3; round++ {
				clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
				m.cleaned = append(m.cleaned, clock.Now().UnixMilli())
				l.mu.Lock()
				l.cleanerCheckpoint = 0 // a full pass, so tombstones past their horizon go
				l.mu.Unlock()
				cleanNow(t, l, 1<<20)
				m.check(t, l, cfg.DeleteRetentionMs)
			}
			recs := readAllRecords(t, l)
			live := 0
			for _, e := range m.latest {
				if !e.tombstone {
					live++
				}
			}
			if len(recs) != live {
				t.Fatalf("after full cleaning %d records, %d live keys", len(recs), live)
			}
		})
	}
}

// TestCleanerStopsWhereTheMapFills: with room for 10 keys, a cleaning of 40
// distinct keys covers exactly the first 10 offsets, as Kafka does.
func TestCleanerStopsWhereTheMapFills(t *testing.T) {
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "c-0"), compactConfig(), clock, Options{})
	defer l.Close()
	for i := 0; i < 40; i++ {
		appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: fmt.Sprint("key", i), value: strings.Repeat("v", 100)})
	}
	appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: "key0", value: "new"})
	m := newOffsetMap(offsetMapEntrySize*11, 0.95) // 11 slots * 0.95: 10 keys
	stats, err := cleanWith(l, m)
	if err != nil {
		t.Fatal(err)
	}
	if stats.EndOffset != 10 || stats.MapEntries != 10 || stats.MapMemoryBytes > offsetMapEntrySize*11 {
		t.Fatalf("stats %+v, want end offset 10 with 10 entries", stats)
	}
	if l.CleanerCheckpoint() != 10 {
		t.Fatalf("checkpoint %d", l.CleanerCheckpoint())
	}
}

// TestCleanerKeepsProducersLastBatch: a producer's last batch whose every
// record was superseded stays as an empty batch with its offsets and
// sequence, as Kafka's RETAIN_EMPTY; other emptied batches go.
func TestCleanerKeepsProducersLastBatch(t *testing.T) {
	clock := newManualClock()
	cfg := compactConfig()
	l := openTestLog(t, filepath.Join(t.TempDir(), "c-0"), cfg, clock, Options{})
	defer l.Close()
	for seq := int32(0); seq < 3; seq++ {
		b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: clock.Now().UnixMilli(),
			Producer: &batch.Producer{ID: 7, Epoch: 0, BaseSequence: seq}}, []batch.Record{{Key: []byte("k"), Value: []byte(fmt.Sprint(seq))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A later plain write supersedes the producer's last record.
	for i := 0; i < 30; i++ {
		appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: "k", value: strings.Repeat("z", 200)})
	}
	cleanNow(t, l, 1<<20)
	var hdr [batch.HeaderSize]byte
	var found []batch.Header
	l.mu.RLock()
	for _, s := range l.segments {
		for pos := int64(0); pos < s.size; {
			h, err := s.readHeaderAt(hdr[:], pos, s.size)
			if err != nil {
				t.Fatal(err)
			}
			if h.ProducerID == 7 {
				found = append(found, h)
			}
			pos += int64(h.Size())
		}
	}
	l.mu.RUnlock()
	if len(found) != 1 || found[0].BaseOffset != 2 || found[0].RecordCount != 0 || found[0].BaseSequence != 2 {
		t.Fatalf("producer batches after cleaning: %+v", found)
	}
}

// TestCleanerStopsOnCorruption flips a byte in a dirty segment: the
// cleaning fails with ErrCorrupt and the log reads as before.
func TestCleanerStopsOnCorruption(t *testing.T) {
	clock := newManualClock()
	dir := filepath.Join(t.TempDir(), "c-0")
	l := openTestLog(t, dir, compactConfig(), clock, Options{})
	defer l.Close()
	for i := 0; i < 60; i++ {
		appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: fmt.Sprint("k", i%5), value: strings.Repeat("v", 100)})
	}
	l.mu.RLock()
	victim := l.segments[1]
	l.mu.RUnlock()
	f, err := os.OpenFile(offsetFileName(dir, victim.baseOffset, logSuffix), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, batch.HeaderSize+3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := dirListing(t, dir)
	_, err = cleanWith(l, newOffsetMap(1<<20, 0.9))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("clean of a corrupt segment: %v, want ErrCorrupt", err)
	}
	if after := dirListing(t, dir); after != before {
		t.Fatalf("files changed:\n%s\nto\n%s", before, after)
	}
	if l.CleanerCheckpoint() != 0 {
		t.Fatalf("checkpoint moved to %d", l.CleanerCheckpoint())
	}
}

func dirListing(t testing.TB, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, "\n")
}

// errCrash simulates a crash at a step of the swap.
var errCrash = errors.New("simulated crash")

// TestCleanerCrashAtEachStep stops a cleaning at each step of the swap
// protocol, abandons the log as a crash would and reopens it. Before the
// commit (.cleaned written) the log must read exactly as before; after it,
// exactly as the same cleaning of a copy that was not interrupted: never a
// mix of old and new segments, never a loss. Cleaning then completes.
func TestCleanerCrashAtEachStep(t *testing.T) {
	steps := []string{"cleaned", "swap", "deleted-0", "deleted-1", "done"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			clock := newManualClock()
			root := t.TempDir()
			dir := filepath.Join(root, "c-0")
			cfg := compactConfig()
			cfg.SegmentBytes = 1 << 10 // many segments, so that groups have several
			l := openTestLog(t, dir, cfg, clock, Options{})
			m := &cleanerModel{latest: map[string]modelEntry{}, horizons: map[string]int64{}}
			for i := 0; i < 80; i++ {
				// The first records have keys of their own, so the first
				// segment keeps live data while the later ones of its
				// group are wholly superseded.
				r := kv{key: fmt.Sprint("k", i%7), value: fmt.Sprint("v", i, strings.Repeat("x", 40))}
				if i < 5 {
					r.key = fmt.Sprint("first", i)
				}
				info := appendKVs(t, l, clock.Now().UnixMilli(), batch.None, r)
				m.write(r, info.FirstOffset)
			}
			// Group segments in pairs: segment.bytes here caps a group.
			l.SetConfig(func() Config { c := cfg; c.SegmentBytes = 2 << 10; return c }())
			before := readAllRecords(t, l)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			copyDir := filepath.Join(root, "copy", "c-0")
			copyLogDir(t, dir, copyDir)
			ref := openTestLog(t, copyDir, l.Config(), clock, Options{})
			ref.SetHighWatermark(ref.LogEndOffset())
			// The reference completes the first group's swap and stops, as
			// the interrupted cleaning stops in its first group.
			ref.cleanHook = func(s string) error {
				if s == "done" {
					return errCrash
				}
				return nil
			}
			if _, err := cleanWith(ref, newOffsetMap(1<<20, 0.9)); !errors.Is(err, errCrash) {
				t.Fatalf("reference clean: %v", err)
			}
			want := readAllRecords(t, ref)
			ref.Close()
			if step == "cleaned" {
				want = before
			}
			l.cleanHook = func(s string) error {
				if s == step {
					return errCrash
				}
				return nil
			}
			if _, err := cleanWith(l, newOffsetMap(1<<20, 0.9)); !errors.Is(err, errCrash) {
				t.Fatalf("clean: %v, want the simulated crash", err)
			}
			l.bg.Wait()
			l.release()
			l = openTestLog(t, dir, cfg, clock, Options{})
			defer l.Close()
			l.SetHighWatermark(l.LogEndOffset())
			for _, e := range []string{cleanedSuffix, swapSuffix, deletedSuffix} {
				if s := dirListing(t, dir); strings.Contains(s, e) {
					t.Fatalf("after recovery, %s files remain:\n%s", e, s)
				}
			}
			got := readAllRecords(t, l)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after recovery the log holds %d records:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
			}
			m.check(t, l, cfg.DeleteRetentionMs)
			cleanNow(t, l, 1<<20)
			m.check(t, l, cfg.DeleteRetentionMs)
		})
	}
}

// copyLogDir copies the segment files of a partition directory.
func copyLogDir(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzCleanSegment writes arbitrary bytes as an inactive segment of a
// compacted log and cleans it: the cleaner either succeeds or stops with
// ErrCorrupt, never panics, and never changes the log when it stops.
func FuzzCleanSegment(f *testing.F) {
	good := func(recs ...kv) []byte {
		out := make([]batch.Record, len(recs))
		for i, r := range recs {
			out[i] = batch.Record{OffsetDelta: int32(i), Key: []byte(r.key), Value: []byte(r.value)}
		}
		b, _ := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: 1}, out, nil)
		return b
	}
	g := good(kv{key: "a", value: "1"}, kv{key: "a", value: "2"}, kv{key: "b", value: "3"})
	f.Add([]byte{})
	f.Add(make([]byte, batch.HeaderSize))
	f.Add(g)
	f.Add(append(append([]byte{}, g...), 1, 2, 3))
	bad := append([]byte{}, g...)
	bad[batch.HeaderSize+2] ^= 0x10
	f.Add(bad)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		dir := filepath.Join(t.TempDir(), "c-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(offsetFileName(dir, 0, logSuffix), data, 0o644); err != nil {
			t.Fatal(err)
		}
		clock := testutil.NewClock(time.UnixMilli(1_700_000_000_000))
		// A clean shutdown trusts the segment as is, so the corrupt bytes
		// reach the cleaner instead of being cut by recovery.
		l, err := Open(dir, compactConfig(), Options{Now: clock.Now, CleanShutdown: true, RecoveryPoint: math.MaxInt64})
		if err != nil {
			return
		}
		defer l.Close()
		l.appendMu.Lock()
		err = l.rollLocked()
		l.appendMu.Unlock()
		if err != nil {
			return
		}
		l.SetHighWatermark(l.LogEndOffset())
		before := dirListing(t, dir)
		_, err = cleanWith(l, newOffsetMap(1<<20, 0.9))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("clean: %v, want nil or ErrCorrupt", err)
			}
			if after := dirListing(t, dir); after != before {
				t.Fatalf("a failed cleaning changed the files:\n%s\nto\n%s", before, after)
			}
		}
	})
}

// TestCleanerRejectsBadOffsetDeltas: a batch with a valid CRC whose
// records' offset deltas go backwards cannot be rewritten keeping its
// offsets; the cleaner stops with ErrCorrupt.
func TestCleanerRejectsBadOffsetDeltas(t *testing.T) {
	clock := newManualClock()
	dir := filepath.Join(t.TempDir(), "c-0")
	l := openTestLog(t, dir, compactConfig(), clock, Options{})
	defer l.Close()
	recs := []batch.Record{{OffsetDelta: 0, Key: []byte("a"), Value: []byte("1")}, {OffsetDelta: 1, Key: []byte("a"), Value: []byte("2")}}
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: 1}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Swap the two records' offset deltas (the second record's delta byte
	// follows its length, attributes and timestamp delta) and fix the CRC.
	h, _ := batch.ParseHeader(b)
	body := b[batch.HeaderSize:h.Size()]
	first := int(body[0]>>1) + 1 // zig-zag length of record 0, plus its varint byte
	body[3], body[first+3] = body[first+3], body[3]
	batch.UpdateCRC(b)
	if _, rs, err := batch.ReadRecords(b, nil); err != nil || rs[0].OffsetDelta != 1 {
		t.Fatalf("test batch not as intended: %v %+v", err, rs)
	}
	l.appendMu.Lock()
	_, err = l.appendBatchLocked(b, &h)
	if err == nil {
		err = l.rollLocked()
	}
	l.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := cleanWith(l, newOffsetMap(1<<20, 0.9)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("clean: %v, want ErrCorrupt", err)
	}
}

// TestCleanerIndexesStaySparseWhenFull: segments written with a large
// index.interval.bytes, cleaned after it dropped to 0 (an entry per batch)
// with a small segment.index.bytes, fill the cleaned index; the cleaning
// still succeeds with a sparser index that agrees with a scan.
func TestCleanerIndexesStaySparseWhenFull(t *testing.T) {
	clock := newManualClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.SegmentIndexBytes = 4 * offsetEntrySize * timeEntrySize // 48 offset entries
	cfg.IndexIntervalBytes = 1 << 20
	l := openTestLog(t, filepath.Join(t.TempDir(), "c-0"), cfg, clock, Options{})
	defer l.Close()
	m := &cleanerModel{latest: map[string]modelEntry{}, horizons: map[string]int64{}}
	for i := 0; i < 400; i++ {
		r := kv{key: fmt.Sprint("k", i), value: "v"}
		info := appendKVs(t, l, clock.Now().UnixMilli()+int64(i), batch.None, r)
		m.write(r, info.FirstOffset)
	}
	cfg.IndexIntervalBytes = 0
	l.SetConfig(cfg)
	cleanNow(t, l, 1<<20)
	m.check(t, l, cfg.DeleteRetentionMs)
}

// TestCleanerLeavesUnchangedSegments: a group of one segment whose every
// batch would be copied byte for byte is not rewritten, so that cleaning
// an already clean log (Kafka re-cleans from the log start each round)
// does not swap in a copy and keep the old files open for
// file.delete.delay.ms: with a short log.cleaner.backoff.ms and busy
// small segments (__consumer_offsets under many commits) those open
// files ran the broker out of descriptors.
func TestCleanerLeavesUnchangedSegments(t *testing.T) {
	clock := newManualClock()
	dir := filepath.Join(t.TempDir(), "c-0")
	l := openTestLog(t, dir, compactConfig(), clock, Options{})
	defer l.Close()
	for i := 0; i < 60; i++ {
		appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: fmt.Sprint("key", i), value: strings.Repeat("v", 100)})
	}
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, got %d", l.NumSegments())
	}
	before := readAllRecords(t, l)
	cleanNow(t, l, 1<<20)
	if n := len(l.pending); n != 0 {
		t.Fatalf("%d segments replaced though no record was dropped", n)
	}
	if cp, active := l.CleanerCheckpoint(), l.segments[len(l.segments)-1].baseOffset; cp != active {
		t.Fatalf("cleaner checkpoint %d, want the active segment's base %d", cp, active)
	}
	if after := readAllRecords(t, l); !reflect.DeepEqual(before, after) {
		t.Fatalf("records changed:\n%v\n%v", before, after)
	}
	// A superseded record changes its segment, which is rewritten.
	appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: "key0", value: "new"})
	for i := 0; i < 30; i++ {
		appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: fmt.Sprint("more", i), value: strings.Repeat("v", 100)})
	}
	cleanNow(t, l, 1<<20)
	if len(l.pending) == 0 {
		t.Fatal("the segment holding the superseded key0 was not rewritten")
	}
	// A replaced segment keeps only its .log open until it is removed.
	for _, p := range l.pending {
		if p.seg.index.file.f != nil {
			t.Errorf("deleted segment %d: its .index is still open", p.seg.baseOffset)
		}
		if p.seg.timeIndex.file.f != nil {
			t.Errorf("deleted segment %d: its .timeindex is still open", p.seg.baseOffset)
		}
	}
	checkIndexes(t, l)
}
