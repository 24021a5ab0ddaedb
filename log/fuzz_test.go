package log

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRecover writes arbitrary bytes as a segment (and, from the tail of
// the input, as its offset index) and opens the log both after a clean and
// an unclean stop. Opening must never panic, and the opened log must be
// usable: reads of every offset succeed and an append lands at the end.
func FuzzRecover(f *testing.F) {
	valid := buildBatch(plainSpec(1), nRecords(3, 10))
	two := append(append([]byte(nil), valid...), valid...)
	// Give the second batch offsets after the first.
	two[len(valid)+7] = 3
	f.Add([]byte{}, []byte{}, false)
	f.Add(make([]byte, 100), make([]byte, 16), false)
	f.Add(valid, []byte{}, false)
	f.Add(two, []byte{0, 0, 0, 5, 0, 0, 0, 100}, true)
	f.Add(append(append([]byte(nil), valid...), 0xde, 0xad), []byte{}, false)
	f.Add(bytes.Repeat([]byte{0xff}, 80), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}, true)
	f.Fuzz(func(t *testing.T, seg, index []byte, clean bool) {
		dir := filepath.Join(t.TempDir(), "f-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(offsetFileName(dir, 0, logSuffix), seg, 0o644)
		os.WriteFile(offsetFileName(dir, 0, indexSuffix), index, 0o644)
		os.WriteFile(offsetFileName(dir, 0, timeIndexSuffix), index, 0o644)
		os.WriteFile(offsetFileName(dir, 0, snapshotSuffix), index, 0o644)
		os.WriteFile(offsetFileName(dir, 0, txnIndexSuffix), index, 0o644)
		os.WriteFile(filepath.Join(dir, leaderEpochCheckpointFile), index, 0o644)
		cfg := DefaultConfig()
		cfg.SegmentIndexBytes = 4096
		l, err := Open(dir, cfg, Options{Now: newManualClock().Now, CleanShutdown: clean, RecoveryPoint: math.MaxInt64})
		if err != nil {
			// A clean-stop open trusts the segment; data that contradicts
			// itself is then reported, never a panic.
			return
		}
		defer l.Close()
		leo := l.LogEndOffset()
		for o := l.LogStartOffset(); o < leo && o < l.LogStartOffset()+64; o++ {
			if _, err := l.Read(o, 1<<20, math.MaxInt64, true); err != nil && !clean {
				t.Fatalf("read %d of recovered log: %v", o, err)
			}
		}
		if clean {
			return
		}
		info, err := l.Append(buildBatch(plainSpec(1), nRecords(1, 1)), 0)
		if err != nil || info.FirstOffset != leo {
			t.Fatalf("append after recovery: %+v, %v (LEO %d)", info, err, leo)
		}
	})
}

// FuzzTxnIndex decodes arbitrary .txnindex contents: never a panic; the
// valid prefix it returns re-encodes to the input's first bytes, and only
// a fully valid input decodes without error.
func FuzzTxnIndex(f *testing.F) {
	valid := AbortedTxn{1, 2, 4, 5}.appendTo(nil)
	valid = AbortedTxn{3, 1, 9, 10}.appendTo(valid)
	f.Add([]byte{})
	f.Add(make([]byte, abortedTxnSize))
	f.Add(valid)
	f.Add(append(append([]byte(nil), valid...), 0xde, 0xad))
	f.Add(bytes.Repeat([]byte{0xff}, 3*abortedTxnSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeTxnIndex(data)
		var enc []byte
		for _, a := range entries {
			enc = a.appendTo(enc)
		}
		if !bytes.HasPrefix(data, enc) {
			t.Fatalf("entries %+v re-encode to %x, not a prefix of %x", entries, enc, data)
		}
		if err == nil && len(enc) != len(data) {
			t.Fatalf("accepted %d of %d bytes without error", len(enc), len(data))
		}
	})
}

// FuzzMarkerBatch decodes arbitrary bytes as a control batch: never a
// panic, and a marker Brook builds decodes to itself.
func FuzzMarkerBatch(f *testing.F) {
	for _, m := range []TxnMarker{{1, 0, 0, true, 0}, {math.MaxInt64, math.MaxInt16, math.MaxInt32, false, 0}} {
		b, err := buildMarkerBatch(m, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Commit)
	}
	f.Add([]byte{}, int64(0), int16(0), int32(0), false)
	f.Add(buildBatch(plainSpec(1), nRecords(1, 4)), int64(-1), int16(-1), int32(-1), false)
	f.Fuzz(func(t *testing.T, data []byte, pid int64, epoch int16, coord int32, commit bool) {
		decodeMarkerBatch(data, nil)
		if pid < 0 {
			return
		}
		want := TxnMarker{pid, epoch, coord, commit, 0}
		b, err := buildMarkerBatch(want, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := decodeMarkerBatch(b, nil)
		if err != nil || !ok || got != want {
			t.Fatalf("built %+v, decoded %+v %v %v", want, got, ok, err)
		}
	})
}

// FuzzProducerSnapshot: any input either fails to decode or decodes to a
// state whose encoding decodes to the same encoding.
func FuzzProducerSnapshot(f *testing.F) {
	ps := newProducerState()
	ps.producers[3] = &producerEntry{Epoch: 1, LastTimestamp: 5, Batches: []producerBatch{{0, 2, 0, 2, 5}}, CurrentTxnFirstOffset: 0, CoordinatorEpoch: 2}
	f.Add(ps.encode())
	f.Add(newProducerState().encode())
	f.Add([]byte("BRPS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := decodeProducerSnapshot(data)
		if err != nil {
			return
		}
		enc := ps.encode()
		again, err := decodeProducerSnapshot(enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !bytes.Equal(again.encode(), enc) {
			t.Fatal("re-encoding differs")
		}
	})
}
