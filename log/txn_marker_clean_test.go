package log

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/brook-mq/brook/protocol/batch"
)

// committedView is what a read_committed consumer sees of the log: the
// data records below the last stable offset, with the aborted
// transactions dropped as Kafka's consumer drops them (an aborted
// producer's batches are skipped from the transaction's first offset
// until its ABORT marker).
func committedView(t *testing.T, l *Log) []readRecord {
	t.Helper()
	return committedViewFrom(t, l, l.LogStartOffset())
}

// committedViewFrom is committedView for a consumer starting at from.
func committedViewFrom(t *testing.T, l *Log, from int64) []readRecord {
	t.Helper()
	lso := l.LastStableOffset()
	aborted := l.AbortedTransactions(from, lso)
	slices.SortFunc(aborted, func(a, b AbortedTxn) int { return int(a.FirstOffset - b.FirstOffset) })
	skipping := map[int64]bool{}
	var out []readRecord
	for off := from; off < lso; {
		s, err := l.Read(off, 1<<20, lso, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		b := readAllSlice(t, s)
		if len(b) == 0 {
			break // cleaned away up to the LSO
		}
		for len(b) > 0 {
			h, recs, err := batch.ReadRecords(b, nil)
			if err != nil {
				t.Fatalf("read batch: %v", err)
			}
			b = b[h.Size():]
			off = h.LastOffset() + 1
			if h.HasProducerID() {
				for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
					skipping[aborted[0].ProducerID] = true
					aborted = aborted[1:]
				}
			}
			if h.Control() {
				if len(recs) > 0 && len(recs[0].Key) >= 4 && recs[0].Key[3] == byte(controlTypeAbort) {
					delete(skipping, h.ProducerID)
				}
				continue
			}
			if h.Transactional() && skipping[h.ProducerID] {
				continue
			}
			for _, r := range recs {
				if o := h.BaseOffset + int64(r.OffsetDelta); o >= from && o < lso {
					out = append(out, readRecord{offset: o, key: string(r.Key), value: string(r.Value)})
				}
			}
		}
	}
	return out
}

// latestByKey is the value a compacted read_committed view gives each key.
func latestByKey(recs []readRecord) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		m[r.key] = r.value
	}
	return m
}

// controlBatches maps each control batch's base offset to its delete
// horizon (-1 if none, -2 for an empty batch).
func controlBatches(t *testing.T, l *Log) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		s, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		b := readAllSlice(t, s)
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.Control() {
				hz, ok := h.DeleteHorizonMs()
				if !ok {
					hz = -1
				}
				if h.RecordCount == 0 {
					hz = -2
				}
				out[h.BaseOffset] = hz
			}
			b = b[h.Size():]
			off = h.LastOffset() + 1
		}
	}
	return out
}

// TestCleanerRemovesMarkers: as Kafka's cleaner (KIP-534), a transaction
// marker stays while its transaction has a batch in the log (an emptied
// last batch of its producer counts); once the data is gone, the first
// cleaning that finds it so gives the marker a delete horizon of
// delete.retention.ms, and a cleaning at or after the horizon removes it,
// with its .txnindex entry. Through every cleaning the LSO and what a
// read_committed consumer sees (compacted) stay the same.
func TestCleanerRemovesMarkers(t *testing.T) {
	clock := newManualClock()
	cfg := compactConfig()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer func() { l.Close() }() // l is reopened below
	w := writeMarkerLog(t, l)
	m1, m2, m3, m4, m5, m6, m7 := w.markers[0], w.markers[1], w.markers[2], w.markers[3], w.markers[4], w.markers[5], w.markers[6]
	filler := func() { w.filler(l) }
	lso := l.LastStableOffset()
	view := latestByKey(committedView(t, l))
	abortedBefore := l.AbortedTransactions(0, l.LogEndOffset())
	check := func(step string) {
		t.Helper()
		if got := l.LastStableOffset(); got != lso {
			t.Fatalf("%s: LSO %d, high watermark %d", step, got, l.HighWatermark())
		}
		recs := committedView(t, l)
		got := latestByKey(recs)
		for k, v := range view {
			if k[0] != 'f' && got[k] != v {
				t.Fatalf("%s: read_committed sees %q=%q, want %q (view %v)", step, k, got[k], v, got)
			}
		}
		for k, v := range got {
			if k[0] != 'f' && view[k] != v {
				t.Fatalf("%s: read_committed sees %q=%q, not in the uncleaned view %v", step, k, v, view)
			}
		}
		// Every aborted transaction left in the index is one from before
		// cleaning; a missing one has no batch left in the log.
		after := l.AbortedTransactions(0, l.LogEndOffset())
		for _, a := range after {
			if !slices.Contains(abortedBefore, a) {
				t.Fatalf("%s: aborted %+v not among %+v", step, a, abortedBefore)
			}
		}
		if got := readTxnIndexes(t, l.Dir()); fmt.Sprint(got) != fmt.Sprint(after) {
			t.Fatalf("%s: .txnindex files %+v, in memory %+v", step, got, after)
		}
		checkIndexes(t, l)
	}
	check("before cleaning")
	expect := func(step string, want map[int64]int64) {
		t.Helper()
		if got := controlBatches(t, l); !maps.Equal(got, want) {
			t.Fatalf("%s: markers (offset: horizon) %v, want %v", step, got, want)
		}
		check(step)
	}
	cleanRound := func() {
		filler()
		l.SetHighWatermark(l.LogEndOffset())
		lso = l.LastStableOffset()
		cleanNow(t, l, 1<<20)
	}
	all := map[int64]int64{m1: -1, m2: -1, m3: -1, m4: -1, m5: -1, m6: -1, m7: -1}
	expect("uncleaned", all)
	// The first cleaning drops the data of m2 and m3 but sees it: the
	// markers stay as they are. m7 never had data: it gets its horizon.
	cleanRound()
	h7 := clock.Now().UnixMilli() + cfg.DeleteRetentionMs
	expect("first cleaning", map[int64]int64{m1: -1, m2: -1, m3: -1, m4: -1, m5: -1, m6: -1, m7: h7})
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 2 {
		t.Fatalf("first cleaning: aborted %+v, want both", got)
	}
	// The second finds their transactions empty: delete horizon.
	clock.Advance(10 * time.Millisecond)
	cleanRound()
	horizon := clock.Now().UnixMilli() + cfg.DeleteRetentionMs
	expect("second cleaning", map[int64]int64{m1: -1, m2: horizon, m3: horizon, m4: -1, m5: -1, m6: -1, m7: h7})
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 || got[0].LastOffset != m6 {
		t.Fatalf("second cleaning: aborted %+v, want only the one of marker %d", got, m6)
	}
	// Just before the horizon they stay; at it they go. m7, past its
	// own, stays emptied as producer 5's last entry.
	clock.Advance(time.Duration(cfg.DeleteRetentionMs-1) * time.Millisecond)
	cleanRound()
	expect("before the horizon", map[int64]int64{m1: -1, m2: horizon, m3: horizon, m4: -1, m5: -1, m6: -1, m7: -2})
	clock.Advance(time.Millisecond)
	cleanRound()
	final := map[int64]int64{m1: -1, m4: -1, m5: -1, m6: -1, m7: -2}
	expect("at the horizon", final)
	clock.Advance(time.Hour)
	cleanRound()
	expect("an hour later", final)
	// A full recovery reads the cleaned segments, emptied markers
	// included, to the same state.
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range mustGlob(t, filepath.Join(dir, "*.snapshot")) {
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	l = openTestLog(t, dir, cfg, clock, Options{RecoveryPoint: 0})
	l.SetHighWatermark(l.LogEndOffset())
	lso = l.LastStableOffset()
	expect("after a full recovery", final)
}

// latestOffsets maps each key to the offset of its latest record.
func latestOffsets(recs []readRecord) map[string]int64 {
	m := map[string]int64{}
	for _, r := range recs {
		m[r.key] = r.offset
	}
	return m
}

// TestCleanerMarkersAgainstUncleaned runs random interleavings of
// transactions of several producers, commits, aborts and other batches on
// two logs, and cleans one of them now and then as the clock moves: the
// LSO stays the uncleaned log's, a read_committed consumer starting
// anywhere sees only records the uncleaned log shows it and the same
// latest record of every key, and the aborted transactions of any range
// are among the uncleaned log's. Markers do go.
func TestCleanerMarkersAgainstUncleaned(t *testing.T) {
	removed := 0
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			clock := newManualClock()
			ref := openTestLog(t, filepath.Join(t.TempDir(), "ref-0"), compactConfig(), clock, Options{})
			defer ref.Close()
			l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), compactConfig(), clock, Options{})
			defer l.Close()
			m := newTxnModel()
			hw := int64(0)
			for step := 0; step < 600; step++ {
				op := m.next(r)
				mustOp(t, ref, op)
				mustOp(t, l, op)
				hw += r.Int64N(m.leo - hw + 1)
				ref.SetHighWatermark(hw)
				l.SetHighWatermark(hw)
				if step%20 != 19 {
					continue
				}
				clock.Advance(time.Duration(r.Int64N(1500)) * time.Millisecond)
				if _, err := cleanWith(l, newOffsetMap(1<<20, 0.9)); err != nil {
					t.Fatalf("step %d: clean: %v", step, err)
				}
				if got, want := l.LastStableOffset(), ref.LastStableOffset(); got != want {
					t.Fatalf("step %d: LSO %d, uncleaned %d", step, got, want)
				}
				for range 5 {
					from := r.Int64N(l.LastStableOffset() + 1)
					got, want := committedViewFrom(t, l, from), committedViewFrom(t, ref, from)
					if g, w := latestOffsets(got), latestOffsets(want); !maps.Equal(g, w) {
						t.Fatalf("step %d: read_committed from %d: latest offsets %v, uncleaned %v", step, from, g, w)
					}
					for _, rec := range got {
						if !slices.Contains(want, rec) {
							t.Fatalf("step %d: read_committed from %d sees %+v, not in the uncleaned log", step, from, rec)
						}
					}
				}
				for range 10 {
					f := r.Int64N(m.leo + 1)
					u := f + r.Int64N(m.leo-f+2)
					want := ref.AbortedTransactions(f, u)
					for _, a := range l.AbortedTransactions(f, u) {
						if !slices.Contains(want, a) {
							t.Fatalf("step %d: aborted in [%d, %d): %+v not among the uncleaned %+v", step, f, u, a, want)
						}
					}
				}
				if got, want := readTxnIndexes(t, l.Dir()), l.AbortedTransactions(0, m.leo); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("step %d: .txnindex files %+v, in memory %+v", step, got, want)
				}
				checkIndexes(t, l)
			}
			removed += len(controlBatches(t, ref)) - len(controlBatches(t, l))
		})
	}
	if removed == 0 {
		t.Fatal("no marker was removed: the test does not exercise marker removal")
	}
}

// markerLog is the log of writeMarkerLog.
type markerLog struct {
	markers []int64    // m1..m6, see writeMarkerLog
	filler  func(*Log) // appends 8 plain records, a segment's worth
}

// writeMarkerLog writes transactions of four producers whose markers are
// m1 (commit, data kept), m2 (abort; the producer writes again so its
// batches all go), m3 (commit, data superseded by the producer's next
// transaction), m4 and m5 (commits, data kept) and m6 (abort of its
// producer's only batch, which stays emptied), and m7 (an abort of
// producer 5, which wrote nothing else: its marker, its last entry, stays
// emptied once past its horizon), then filler so that all of
// them are in cleanable segments.
func writeMarkerLog(t *testing.T, l *Log) markerLog {
	t.Helper()
	round := 0
	fill := func(l *Log) {
		for i := range 8 {
			appendKVs(t, l, l.now().UnixMilli(), batch.None, kv{key: fmt.Sprintf("f%d", i), value: fmt.Sprintf("%d-%0200d", round, i)})
		}
		round++
	}
	filler := func() { fill(l) }
	var markers []int64
	marker := func(pid int64, commit bool) {
		markers = append(markers, mustOp(t, l, markerOp(pid, 0, 0, commit)).FirstOffset)
	}
	appendTxnKVs(t, l, 1, 0, kv{key: "a", value: "a1"})
	marker(1, true)
	appendTxnKVs(t, l, 2, 0, kv{key: "b", value: "bad"})
	appendTxnKVs(t, l, 2, 1, kv{key: "b2", value: "bad"})
	marker(2, false)
	filler()
	appendTxnKVs(t, l, 3, 0, kv{key: "c", value: "c-old"})
	marker(3, true)
	filler()
	appendTxnKVs(t, l, 3, 1, kv{key: "c", value: "c-new"})
	marker(3, true)
	appendTxnKVs(t, l, 2, 2, kv{key: "d", value: "d1"})
	marker(2, true)
	appendTxnKVs(t, l, 4, 0, kv{key: "e", value: "bad"})
	marker(4, false)
	marker(5, false) // producer 5's only entry: kept emptied
	filler()
	filler()
	l.SetHighWatermark(l.LogEndOffset())
	return markerLog{markers: markers, filler: fill}
}

// TestCleanerMarkersCrashAtEachStep interrupts, at each step of its swap,
// the cleaning that removes markers past their delete horizon: after
// recovery a read_committed consumer sees what it saw, the .txnindex
// files match the aborted transactions in memory, and the next cleaning
// removes the markers.
func TestCleanerMarkersCrashAtEachStep(t *testing.T) {
	for _, step := range []string{"cleaned", "swap", "deleted-0", "done"} {
		t.Run(step, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			clock := newManualClock()
			cfg := compactConfig()
			l := openTestLog(t, dir, cfg, clock, Options{})
			w := writeMarkerLog(t, l)
			view := latestByKey(committedView(t, l))
			for range 2 { // the second cleaning sets m2's and m3's horizon
				w.filler(l)
				l.SetHighWatermark(l.LogEndOffset())
				cleanNow(t, l, 1<<20)
			}
			if got := controlBatches(t, l); got[w.markers[1]] < 0 || got[w.markers[2]] < 0 {
				t.Fatalf("setup: markers %v, want horizons on %d and %d", got, w.markers[1], w.markers[2])
			}
			clock.Advance(time.Duration(cfg.DeleteRetentionMs) * time.Millisecond)
			w.filler(l)
			l.SetHighWatermark(l.LogEndOffset())
			if err := l.Flush(); err != nil {
				t.Fatal(err)
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
			l = openTestLog(t, dir, cfg, clock, Options{RecoveryPoint: math.MaxInt64})
			defer l.Close()
			l.SetHighWatermark(l.LogEndOffset())
			check := func(when string) {
				t.Helper()
				got := latestByKey(committedView(t, l))
				for k, v := range view {
					if k[0] != 'f' && got[k] != v {
						t.Fatalf("%s: read_committed sees %q=%q, want %q", when, k, got[k], v)
					}
				}
				if got, want := readTxnIndexes(t, l.Dir()), l.AbortedTransactions(0, l.LogEndOffset()); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: .txnindex files %+v, in memory %+v", when, got, want)
				}
				checkIndexes(t, l)
			}
			check("after recovery")
			w.filler(l)
			l.SetHighWatermark(l.LogEndOffset())
			cleanNow(t, l, 1<<20)
			check("cleaned again")
			want := map[int64]int64{w.markers[0]: -1, w.markers[3]: -1, w.markers[4]: -1, w.markers[5]: -1, w.markers[6]: -2}
			if got := controlBatches(t, l); !maps.Equal(got, want) {
				t.Fatalf("cleaned again: markers %v, want %v", got, want)
			}
		})
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	names, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return names
}
