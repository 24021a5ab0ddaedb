package batch

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestRebuildKeepsRecordsAndBatchFields drops every other record of a
// batch under each codec and checks that the rebuilt batch keeps the
// offsets, producer fields, codec and absolute timestamps, with and
// without a delete horizon.
func TestRebuildKeepsRecordsAndBatchFields(t *testing.T) {
	codecs := mustCodecs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, codec := range allCodecs {
		for _, horizon := range []int64{-1, 1_800_000_000_000} {
			recs := sampleRecords(9, rng)
			b, err := Build(BuildOptions{BaseOffset: 100, PartitionLeaderEpoch: 7, Compression: codec, BaseTimestamp: 1_700_000_000_000,
				Producer: &Producer{ID: 42, Epoch: 3, BaseSequence: 17}}, recs, codecs)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			var kept []Record
			for i := 1; i < len(recs)-1; i += 2 {
				kept = append(kept, recs[i])
			}
			out, err := Rebuild(orig, kept, horizon, codecs)
			if err != nil {
				t.Fatalf("%s: %v", codec, err)
			}
			h, got, err := ReadRecords(out, codecs)
			if err != nil {
				t.Fatalf("%s: read rebuilt: %v", codec, err)
			}
			if err := CheckCRC(out, &h); err != nil {
				t.Fatal(err)
			}
			if h.BaseOffset != 100 || h.LastOffsetDelta != orig.LastOffsetDelta || h.PartitionLeaderEpoch != 7 ||
				h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != 17 || h.Compression() != codec || h.RecordCount != int32(len(kept)) {
				t.Fatalf("%s: header %+v", codec, h)
			}
			d, ok := h.DeleteHorizonMs()
			if ok != (horizon >= 0) || (ok && d != horizon) {
				t.Fatalf("%s: delete horizon %d, %v; want %d", codec, d, ok, horizon)
			}
			maxTs := int64(-1 << 62)
			for i := range kept {
				if got[i].OffsetDelta != kept[i].OffsetDelta || !reflect.DeepEqual(got[i].Key, kept[i].Key) ||
					!reflect.DeepEqual(got[i].Value, kept[i].Value) || len(got[i].Headers) != len(kept[i].Headers) {
					t.Fatalf("%s: record %d: %+v, want %+v", codec, i, got[i], kept[i])
				}
				ts := orig.BaseTimestamp + kept[i].TimestampDelta
				if h.BaseTimestamp+got[i].TimestampDelta != ts {
					t.Fatalf("%s: record %d timestamp %d, want %d", codec, i, h.BaseTimestamp+got[i].TimestampDelta, ts)
				}
				maxTs = max(maxTs, ts)
			}
			if h.MaxTimestamp != maxTs {
				t.Fatalf("%s: max timestamp %d, want %d", codec, h.MaxTimestamp, maxTs)
			}
		}
	}
}

func TestEmptyBatchKeepsOffsetsAndProducer(t *testing.T) {
	b, err := Build(BuildOptions{BaseOffset: 10, Compression: Gzip, BaseTimestamp: 5, Transactional: true,
		Producer: &Producer{ID: 9, Epoch: 1, BaseSequence: 4}}, sampleRecords(3, rand.New(rand.NewPCG(1, 1))), nil)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := ParseHeader(b)
	e := EmptyBatch(orig)
	h, recs, err := ReadRecords(e, nil)
	if err != nil || len(recs) != 0 {
		t.Fatalf("read empty batch: %v, %d records", err, len(recs))
	}
	if err := CheckCRC(e, &h); err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 10 || h.LastOffset() != orig.LastOffset() || h.ProducerID != 9 || h.BaseSequence != 4 ||
		h.Compression() != None || !h.Transactional() || h.BaseTimestamp != NoTimestamp || h.MaxTimestamp != orig.MaxTimestamp || len(e) != HeaderSize {
		t.Fatalf("empty batch header %+v", h)
	}
}
