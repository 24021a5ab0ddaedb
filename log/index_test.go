package log

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestIndexLookupMatchesScan compares the binary searches of both indexes
// with a linear scan over random entries and targets, and checks that
// entries written to the file load back identically.
func TestIndexLookupMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	const base = 1000
	ox := openOffsetIndex(OSFS{}, filepath.Join(dir, "x.index"), base, 1<<16)
	defer ox.file.close()
	tx := openTimeIndex(OSFS{}, filepath.Join(dir, "x.timeindex"), base, 1<<16)
	defer tx.file.close()
	if err := ox.preallocate(); err != nil {
		t.Fatal(err)
	}
	if err := tx.preallocate(); err != nil {
		t.Fatal(err)
	}
	var offs, poss, tss []int64
	off, pos, ts := int64(base), int64(0), int64(5000)
	for i := 0; i < 500; i++ {
		off += 1 + rng.Int64N(10)
		pos += 1 + rng.Int64N(5000)
		ts += rng.Int64N(3) - 1
		if err := ox.append(off, pos); err != nil {
			t.Fatal(err)
		}
		offs, poss = append(offs, off), append(poss, pos)
		if len(tss) == 0 || ts > tss[len(tss)-1] {
			if err := tx.maybeAppend(ts, off, false); err != nil {
				t.Fatal(err)
			}
			tss = append(tss, ts)
		}
		if i == 250 {
			// Half the entries reach the file mid-way, the rest at trim.
			if err := ox.writePending(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 5000; i++ {
		target := base + rng.Int64N(off-base+20)
		want := indexPos{Offset: base, Position: 0}
		for j := range offs {
			if offs[j] <= target {
				want = indexPos{Offset: offs[j], Position: poss[j]}
			}
		}
		if got := ox.lookup(target); got != want {
			t.Fatalf("lookup(%d) = %+v, want %+v", target, got, want)
		}
		tt := 4990 + rng.Int64N(int64(len(tss))+20)
		wantTs, wantOff := int64(-1), int64(base)
		for j := range tx.ts {
			if tx.ts[j] <= tt {
				wantTs, wantOff = tx.ts[j], base+int64(tx.rel[j])
			}
		}
		if gt, gotOff := tx.lookup(tt); gt != wantTs || gotOff != wantOff {
			t.Fatalf("time lookup(%d) = %d, %d; want %d, %d", tt, gt, gotOff, wantTs, wantOff)
		}
	}
	if err := ox.trim(); err != nil {
		t.Fatal(err)
	}
	if err := tx.trim(); err != nil {
		t.Fatal(err)
	}
	ox2 := &offsetIndex{file: indexFile{fs: OSFS{}, name: ox.file.name}, baseOffset: base, maxEntries: ox.maxEntries}
	if err := ox2.load(pos + 1); err != nil || ox2.entries() != len(offs) {
		t.Fatalf("reload: %d entries, %v", ox2.entries(), err)
	}
	for j := range offs {
		if int64(ox2.rel[j])+base != offs[j] || int64(ox2.pos[j]) != poss[j] {
			t.Fatalf("reloaded entry %d differs", j)
		}
	}
	tx2 := &timeIndex{file: indexFile{fs: OSFS{}, name: tx.file.name}, baseOffset: base, maxEntries: tx.maxEntries}
	if err := tx2.load(off + 1); err != nil || len(tx2.ts) != len(tss) {
		t.Fatalf("reload time index: %d entries, %v", len(tx2.ts), err)
	}
}
