package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"path/filepath"
	"reflect"
	"testing"
)

// TestProducerSequenceRules drives Append with idempotent batches through
// Kafka's ProducerAppendInfo cases.
func TestProducerSequenceRules(t *testing.T) {
	type step struct {
		epoch int16
		seq   int32
		n     int
		want  error
		dupOf int // index of the earlier step this duplicates, -1 if none
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{0, 0, 2, nil, -1}, {0, 2, 3, nil, -1}, {0, 5, 1, nil, -1}}},
		{"gap", []step{{0, 0, 2, nil, -1}, {0, 3, 1, ErrOutOfOrderSequence, -1}}},
		{"duplicate of last", []step{{0, 0, 2, nil, -1}, {0, 0, 2, nil, 0}}},
		{"duplicate of fifth last", []step{{0, 0, 1, nil, -1}, {0, 1, 1, nil, -1}, {0, 2, 1, nil, -1}, {0, 3, 1, nil, -1}, {0, 4, 1, nil, -1}, {0, 0, 1, nil, 0}}},
		{"sixth last is out of order", []step{{0, 0, 1, nil, -1}, {0, 1, 1, nil, -1}, {0, 2, 1, nil, -1}, {0, 3, 1, nil, -1}, {0, 4, 1, nil, -1}, {0, 5, 1, nil, -1}, {0, 0, 1, ErrOutOfOrderSequence, -1}}},
		{"same first seq, other length is not a duplicate", []step{{0, 0, 2, nil, -1}, {0, 0, 3, ErrOutOfOrderSequence, -1}}},
		{"older epoch fenced", []step{{3, 0, 1, nil, -1}, {2, 1, 1, ErrInvalidProducerEpoch, -1}}},
		{"older epoch even if duplicate-looking", []step{{3, 0, 1, nil, -1}, {2, 0, 1, ErrInvalidProducerEpoch, -1}}},
		{"new epoch at 0", []step{{0, 0, 5, nil, -1}, {1, 0, 1, nil, -1}, {1, 1, 1, nil, -1}}},
		{"new epoch not at 0", []step{{0, 0, 5, nil, -1}, {1, 5, 1, ErrOutOfOrderSequence, -1}}},
		{"unknown producer any sequence", []step{{0, 42, 1, nil, -1}, {0, 43, 1, nil, -1}}},
		{"sequence wraps", []step{{0, math.MaxInt32 - 1, 2, nil, -1}, {0, 0, 1, nil, -1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), newManualClock(), Options{})
			defer l.Close()
			infos := make([]AppendInfo, len(tc.steps))
			for i, st := range tc.steps {
				spec := batchSpec{baseTimestamp: 10, producerID: 1000, producerEpoch: st.epoch, baseSequence: st.seq}
				leo := l.LogEndOffset()
				info, err := l.Append(buildBatch(spec, nRecords(st.n, 5)), 0)
				if !errors.Is(err, st.want) || (st.want == nil && err != nil) {
					t.Fatalf("step %d: err %v, want %v", i, err, st.want)
				}
				infos[i] = info
				switch {
				case err != nil:
					if l.LogEndOffset() != leo {
						t.Fatalf("step %d: rejected batch appended", i)
					}
				case st.dupOf >= 0:
					o := infos[st.dupOf]
					if !info.Duplicate || info.FirstOffset != o.FirstOffset || info.LastOffset != o.LastOffset || l.LogEndOffset() != leo {
						t.Fatalf("step %d: %+v, want duplicate of %+v without append", i, info, o)
					}
				default:
					if info.Duplicate || info.FirstOffset != leo {
						t.Fatalf("step %d: %+v, want fresh append at %d", i, info, leo)
					}
				}
			}
		})
	}
}

// TestProducerSnapshotRoundTrip: a snapshot keeps, as Kafka's, each
// producer's last batch only, and every flipped byte is detected.
func TestProducerSnapshotRoundTrip(t *testing.T) {
	ps := newProducerState()
	ps.producers[1] = &producerEntry{Epoch: 3, LastTimestamp: 99, Batches: []producerBatch{{0, 4, 10, 14, 98}, {5, 7, 20, 22, 99}}, CurrentTxnFirstOffset: 10, CoordinatorEpoch: 7}
	ps.producers[-7] = &producerEntry{Epoch: -1, CurrentTxnFirstOffset: -1, CoordinatorEpoch: -1}
	got, err := decodeProducerSnapshot(ps.encode())
	if err != nil {
		t.Fatal(err)
	}
	want1 := &producerEntry{Epoch: 3, LastTimestamp: 99, Batches: []producerBatch{{5, 7, 20, 22, 99}}, CurrentTxnFirstOffset: 10, CoordinatorEpoch: 7}
	if len(got.producers) != 2 || !reflect.DeepEqual(got.producers[1], want1) || !reflect.DeepEqual(got.producers[-7], ps.producers[-7]) {
		t.Fatalf("round trip: %+v and %+v", got.producers[1], got.producers[-7])
	}
	if !bytes.Equal(got.encode(), ps.encode()) {
		t.Fatal("re-encoding differs")
	}
	enc := ps.encode()
	for i := range enc {
		bad := append([]byte(nil), enc...)
		bad[i] ^= 0x40
		if _, err := decodeProducerSnapshot(bad); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
}

// TestProducerSnapshotKafkaFormat builds a snapshot field by field as
// Kafka 3.9's ProducerStateManager.writeSnapshot lays it out and checks
// that Brook reads it and writes the same bytes back.
func TestProducerSnapshotKafkaFormat(t *testing.T) {
	b := binary.BigEndian.AppendUint16(nil, 1) // version
	b = append(b, 0, 0, 0, 0)                  // crc, below
	b = binary.BigEndian.AppendUint32(b, 2)    // entries
	// Producer 5: last batch sequences 8..10 at offsets 40..42, an open
	// transaction since offset 30, coordinator epoch 4.
	b = binary.BigEndian.AppendUint64(b, 5)
	b = binary.BigEndian.AppendUint16(b, 2)
	b = binary.BigEndian.AppendUint32(b, 10)
	b = binary.BigEndian.AppendUint64(b, 42)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = binary.BigEndian.AppendUint64(b, 1700)
	b = binary.BigEndian.AppendUint32(b, 4)
	b = binary.BigEndian.AppendUint64(b, 30)
	// Producer 9: only a marker left (no sequence, offset -1); its last
	// batch wrapped the sequence.
	b = binary.BigEndian.AppendUint64(b, 9)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	b = binary.BigEndian.AppendUint64(b, 0xffffffffffffffff)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, 1800)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, 0xffffffffffffffff)
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)))

	ps, err := decodeProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]*producerEntry{
		5: {Epoch: 2, LastTimestamp: 1700, Batches: []producerBatch{{8, 10, 40, 42, 1700}}, CurrentTxnFirstOffset: 30, CoordinatorEpoch: 4},
		9: {Epoch: 0, LastTimestamp: 1800, CurrentTxnFirstOffset: -1, CoordinatorEpoch: 0},
	}
	if !reflect.DeepEqual(ps.producers, want) {
		t.Fatalf("decoded %+v %+v, want %+v %+v", ps.producers[5], ps.producers[9], want[5], want[9])
	}
	if got := ps.encode(); !bytes.Equal(got, b) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", got, b)
	}
	if open := ps.openTxns(); len(open) != 1 {
		t.Fatalf("open transactions %+v, want producer 5's", open)
	}
	if got := decrementSequence(1, 3); got != math.MaxInt32-1 {
		t.Fatalf("decrementSequence(1, 3) = %d, want MaxInt32-1 (Kafka wraps)", got)
	}
}

func TestProducerExpiration(t *testing.T) {
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), clock, Options{})
	defer l.Close()
	now := clock.Now().UnixMilli()
	old := batchSpec{baseTimestamp: now - 5000, producerID: 1, producerEpoch: 0, baseSequence: 0}
	fresh := batchSpec{baseTimestamp: now, producerID: 2, producerEpoch: 0, baseSequence: 0}
	mustAppend(t, l, buildBatch(old, nRecords(1, 1)), 0)
	mustAppend(t, l, buildBatch(fresh, nRecords(1, 1)), 0)
	if n := l.RemoveExpiredProducers(5000); n != 1 {
		t.Fatalf("expired %d producers, want 1", n)
	}
	// The expired producer is unknown again: any sequence is accepted.
	old.baseSequence = 7
	if _, err := l.Append(buildBatch(old, nRecords(1, 1)), 0); err != nil {
		t.Fatalf("expired producer: %v", err)
	}
	fresh.baseSequence = 7
	if _, err := l.Append(buildBatch(fresh, nRecords(1, 1)), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("live producer gap: %v", err)
	}
}

// TestProducerSnapshotVersion1 reads a snapshot written before
// transactions (version 1, without coordinator epoch and open
// transaction), as a log from an older Brook has them.
func TestProducerSnapshotVersion1(t *testing.T) {
	b := []byte("BRPS")
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint64(b, 42)
	b = binary.BigEndian.AppendUint16(b, 2)
	b = binary.BigEndian.AppendUint64(b, 77)
	b = append(b, 1)
	for _, v := range []uint32{0, 4} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	for _, v := range []uint64{10, 14, 77} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[10:], crc32.MakeTable(crc32.Castagnoli)))
	ps, err := decodeProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &producerEntry{Epoch: 2, LastTimestamp: 77, Batches: []producerBatch{{0, 4, 10, 14, 77}}, CurrentTxnFirstOffset: -1, CoordinatorEpoch: -1}
	if !reflect.DeepEqual(ps.producers[42], want) {
		t.Fatalf("v1 snapshot: %+v, want %+v", ps.producers[42], want)
	}
}

// TestProducerSnapshotBrookVersion2 reads a snapshot in the format Brook
// wrote before Kafka's (magic BRPS, version 2, up to five batches), as log
// dirs of older Brooks hold them: every batch and the transaction fields
// come back.
func TestProducerSnapshotBrookVersion2(t *testing.T) {
	b := []byte("BRPS")
	b = binary.BigEndian.AppendUint16(b, 2)
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint64(b, 42)
	b = binary.BigEndian.AppendUint16(b, 2)
	b = binary.BigEndian.AppendUint64(b, 88)
	b = binary.BigEndian.AppendUint32(b, 6)  // coordinator epoch
	b = binary.BigEndian.AppendUint64(b, 15) // open transaction
	b = append(b, 2)
	for _, pb := range []producerBatch{{0, 4, 10, 14, 77}, {5, 6, 15, 16, 88}} {
		b = binary.BigEndian.AppendUint32(b, uint32(pb.FirstSeq))
		b = binary.BigEndian.AppendUint32(b, uint32(pb.LastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(pb.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(pb.LastOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(pb.Timestamp))
	}
	binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[10:], crc32.MakeTable(crc32.Castagnoli)))
	ps, err := decodeProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &producerEntry{Epoch: 2, LastTimestamp: 88, Batches: []producerBatch{{0, 4, 10, 14, 77}, {5, 6, 15, 16, 88}}, CurrentTxnFirstOffset: 15, CoordinatorEpoch: 6}
	if !reflect.DeepEqual(ps.producers[42], want) {
		t.Fatalf("v2 snapshot: %+v, want %+v", ps.producers[42], want)
	}
	// Written again, it is Kafka's format with the last batch.
	again, err := decodeProducerSnapshot(ps.encode())
	if err != nil || binary.BigEndian.Uint16(ps.encode()) != 1 {
		t.Fatalf("re-encode: %v", err)
	}
	if got := again.producers[42].Batches; !reflect.DeepEqual(got, []producerBatch{{5, 6, 15, 16, 88}}) {
		t.Fatalf("re-encoded batches %+v", got)
	}
}
