package log

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// txnModel is the naive model of a partition's transactions: every
// transaction with its span, recomputed from scratch for each question.
type txnModel struct {
	leo     int64
	open    map[int64]int64 // producer id -> first offset
	decided []txnSpan       // every ended transaction, marker as LastOffset
	aborted []AbortedTxn
	seq     map[int64]int32
}

func newTxnModel() *txnModel {
	return &txnModel{open: map[int64]int64{}, seq: map[int64]int32{}}
}

// lso: the oldest transaction that is open or whose marker is not below hw.
func (m *txnModel) lso(hw int64) int64 {
	lso := hw
	for _, first := range m.open {
		lso = min(lso, first)
	}
	for _, s := range m.decided {
		if s.LastOffset >= hw {
			lso = min(lso, s.FirstOffset)
		}
	}
	return lso
}

func (m *txnModel) abortedIn(fetchOffset, upperBound int64) []AbortedTxn {
	var out []AbortedTxn
	for _, a := range m.aborted {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			out = append(out, a)
		}
	}
	return out
}

// next picks a valid random op: transactional producers 1-3 open and end
// transactions (sometimes a marker without one), producer 4 is idempotent
// and producer -1 plain; the model advances as the log should.
func (m *txnModel) next(r *rand.Rand) txnOp {
	pid := []int64{1, 2, 3, 1, 2, 3, 4, -1}[r.IntN(8)]
	_, isOpen := m.open[pid]
	if pid >= 1 && pid <= 3 && (isOpen && r.IntN(5) < 2 || !isOpen && r.IntN(6) == 0) {
		op := markerOp(pid, 0, 0, r.IntN(2) == 0)
		if isOpen {
			first := m.open[pid]
			delete(m.open, pid)
			m.decided = append(m.decided, txnSpan{ProducerID: pid, FirstOffset: first, LastOffset: m.leo})
			if !op.commit {
				lso := m.leo + 1
				for other, f := range m.open {
					if other != pid && f < lso {
						lso = f
					}
				}
				m.aborted = append(m.aborted, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: m.leo, LastStableOffset: lso})
			}
		}
		m.leo++
		return op
	}
	n := 1 + r.IntN(5)
	op := dataOp(pid, 0, m.seq[pid], n, pid >= 1 && pid <= 3)
	if pid < 0 {
		op.epoch, op.seq = -1, -1
	}
	m.seq[pid] += int32(n)
	if op.txn && !isOpen {
		m.open[pid] = m.leo
	}
	m.leo += int64(n)
	return op
}

// TestTxnLSOAndAbortedMatchModel runs random interleavings of
// transactional and other batches from several producers, commits and
// aborts, with a lagging high watermark, over several segments: the last
// stable offset and the aborted transactions of random ranges equal the
// model's, and the .txnindex files hold exactly the model's entries.
func TestTxnLSOAndAbortedMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			dir := filepath.Join(t.TempDir(), "t-0")
			l := openTestLog(t, dir, smallConfig(), newManualClock(), Options{})
			defer l.Close()
			m := newTxnModel()
			hw := int64(0)
			for step := 0; step < 400; step++ {
				op := m.next(r)
				mustOp(t, l, op)
				if l.LogEndOffset() != m.leo {
					t.Fatalf("step %d: LEO %d, model %d", step, l.LogEndOffset(), m.leo)
				}
				hw += r.Int64N(m.leo - hw + 1)
				l.SetHighWatermark(hw)
				if got, want := l.LastStableOffset(), m.lso(hw); got != want {
					t.Fatalf("step %d (%+v): LSO %d, model %d (HW %d)", step, op, got, want, hw)
				}
				if step%10 == 0 {
					for range 20 {
						f := r.Int64N(m.leo + 1)
						u := f + r.Int64N(m.leo-f+2)
						if got, want := l.AbortedTransactions(f, u), m.abortedIn(f, u); !slices.Equal(got, want) {
							t.Fatalf("step %d: aborted in [%d, %d): %+v, model %+v", step, f, u, got, want)
						}
					}
				}
			}
			if l.NumSegments() < 3 {
				t.Fatalf("only %d segments", l.NumSegments())
			}
			if got := readTxnIndexes(t, dir); !slices.Equal(got, m.aborted) {
				t.Fatalf(".txnindex files hold %+v, model %+v", got, m.aborted)
			}
		})
	}
}

// readTxnIndexes decodes every .txnindex of dir in offset order.
func readTxnIndexes(t *testing.T, dir string) []AbortedTxn {
	t.Helper()
	var out []AbortedTxn
	for name, data := range txnIndexFiles(t, dir) {
		_ = name
		entries, err := decodeTxnIndex(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, entries...)
	}
	slices.SortFunc(out, func(a, b AbortedTxn) int { return int(a.LastOffset - b.LastOffset) })
	return out
}

func txnIndexFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), txnIndexSuffix) {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = b
		}
	}
	return out
}

// txnCheckpoint is the state recorded after one op of the recovery test.
type txnCheckpoint struct {
	leo, segBase, segSize int64
	producers             []byte
	unstable              unstableTxns
	txnIndexes            map[string][]byte
}

// TestTxnRecoveryAfterCut cuts a transactional log after a random op (with
// a torn batch behind, and in half the trials a torn .txnindex entry) and
// recovers it from a random recovery point: the
// producer state, the open transactions and every .txnindex are the same,
// byte for byte, as when the log stood at that op. A follower truncation
// to the same offset gives the same state too.
func TestTxnRecoveryAfterCut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, src, smallConfig(), newManualClock(), Options{})
	m := newTxnModel()
	var cps []txnCheckpoint
	for range 300 {
		mustOp(t, l, m.next(r))
		l.SetHighWatermark(l.LogEndOffset())
		s := l.active()
		cps = append(cps, txnCheckpoint{
			leo: l.LogEndOffset(), segBase: s.baseOffset, segSize: s.size,
			producers: l.producers.encode(), unstable: slices.Clone(l.unstable).prune(l.LogEndOffset()),
			txnIndexes: txnIndexFiles(t, src),
		})
	}
	if len(m.aborted) < 5 || l.NumSegments() < 3 {
		t.Fatalf("weak scenario: %d aborts, %d segments", len(m.aborted), l.NumSegments())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for trial := range 12 {
		k := r.IntN(len(cps))
		cp := cps[k]
		t.Run(fmt.Sprintf("cut%d_at_%d", trial, cp.leo), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			copyDir(t, src, dir)
			bases, err := listSegmentBases(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bases {
				if b > cp.segBase {
					for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
						os.Remove(offsetFileName(dir, b, suf))
					}
				}
			}
			seg := offsetFileName(dir, cp.segBase, logSuffix)
			if err := os.Truncate(seg, cp.segSize); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(bytes.Repeat([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 1}, 3)) // a torn batch
			f.Close()
			if trial%2 == 0 {
				// A torn .txnindex entry too: recovery must rebuild it.
				ti := offsetFileName(dir, cp.segBase, txnIndexSuffix)
				if st, err := os.Stat(ti); err == nil && st.Size() >= abortedTxnSize {
					os.Truncate(ti, st.Size()-10)
				}
			}
			var rps []int64
			for _, b := range bases {
				if b <= cp.segBase {
					rps = append(rps, b)
				}
			}
			rp := rps[r.IntN(len(rps))]
			rl := openTestLog(t, dir, smallConfig(), newManualClock(), Options{RecoveryPoint: rp, HighWatermark: cp.leo})
			defer rl.Close()
			checkTxnState(t, rl, dir, cp)

			// A follower truncating the uncut log to the same offset.
			tdir := filepath.Join(t.TempDir(), "t-0")
			copyDir(t, src, tdir)
			tl := openTestLog(t, tdir, smallConfig(), newManualClock(), Options{CleanShutdown: true, RecoveryPoint: 1 << 62, HighWatermark: cp.leo})
			defer tl.Close()
			if err := tl.TruncateTo(cp.leo); err != nil {
				t.Fatal(err)
			}
			checkTxnState(t, tl, tdir, cp)
		})
	}
}

func checkTxnState(t *testing.T, l *Log, dir string, cp txnCheckpoint) {
	t.Helper()
	if l.LogEndOffset() != cp.leo {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), cp.leo)
	}
	if got := l.producers.encode(); !bytes.Equal(got, cp.producers) {
		t.Fatalf("producer state differs:\n got %x\nwant %x", got, cp.producers)
	}
	if !slices.Equal(l.unstable, cp.unstable) {
		t.Fatalf("open transactions %+v, want %+v", l.unstable, cp.unstable)
	}
	if got := txnIndexFiles(t, dir); !maps.EqualFunc(got, cp.txnIndexes, bytes.Equal) {
		t.Fatalf(".txnindex files differ:\n got %x\nwant %x", got, cp.txnIndexes)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func listSegmentBases(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		if o, ok := parseOffsetFileName(e.Name(), logSuffix); ok {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out, nil
}
