package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

func TestMetadataRecordRoundTrip(t *testing.T) {
	for _, st := range allStates {
		s := snapshot{
			producerID: 77, lastProducerID: -1, nextProducerID: -1, epoch: 3, lastEpoch: -1, timeoutMs: 6000, state: st,
			partitions: []TopicPartition{tp("a", 2), tp("a", 5), tp("b", 0)}, startMs: 111, lastUpdateMs: 222,
		}
		r := metadataRecord("tx", s)
		// The key and value are Kafka's schemas: key v0, value v1 (flexible,
		// as Kafka writes it from transaction.version 1).
		var k kmsg.TxnMetadataKey
		if err := k.ReadFrom(r.key); err != nil || k.Version != 0 || k.TransactionalID != "tx" {
			t.Fatalf("key %+v: %v", k, err)
		}
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(r.value); err != nil || v.Version != 1 || v.NextProducerID != -1 || len(v.Topics) != 2 || !slices.Equal(v.Topics[0].Partitions, []int32{2, 5}) {
			t.Fatalf("value %+v: %v", v, err)
		}
		id, got, skip, err := decodeRecord(r.key, r.value)
		if err != nil || skip || id != "tx" || got == nil {
			t.Fatalf("decode: %q %+v %v %v", id, got, skip, err)
		}
		if got.state != s.state || got.producerID != s.producerID || got.epoch != s.epoch || got.timeoutMs != s.timeoutMs ||
			got.startMs != s.startMs || got.lastUpdateMs != s.lastUpdateMs || !slices.Equal(got.partitions, s.partitions) {
			t.Fatalf("round trip: %+v, want %+v", *got, s)
		}
	}
	id, got, _, err := decodeRecord(tombstone("tx").key, nil)
	if err != nil || id != "tx" || got != nil {
		t.Fatalf("tombstone: %q %+v %v", id, got, err)
	}
}

func TestDecodeRecordRejectsUnwrittenStates(t *testing.T) {
	for _, st := range []State{StateDead, StatePrepareEpochFence, 9, -1} {
		r := metadataRecord("tx", snapshot{state: st})
		if _, _, _, err := decodeRecord(r.key, r.value); err == nil {
			t.Errorf("state %d decoded", st)
		}
	}
	if _, _, skip, err := decodeRecord([]byte{0, 5, 0}, nil); !skip || err != nil {
		t.Fatalf("unknown key version: skip %v err %v", skip, err)
	}
	if _, _, _, err := decodeRecord([]byte{0}, nil); err == nil {
		t.Fatal("one-byte key decoded")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	r := metadataRecord("tx", snapshot{producerID: 1, epoch: 2, timeoutMs: 3, state: StateOngoing, partitions: []TopicPartition{tp("a", 1)}})
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0, 0}, []byte{0, 0, 0, 0})
	f.Add(r.key, r.value)
	f.Add(r.key, append(slices.Clone(r.value), 0xff, 0xff))
	f.Add(r.key, []byte(nil))
	// A v0 value, as Kafka 3.9 (and Brook before transaction version 2)
	// wrote it, and a v1 value with every tagged field set.
	v0 := kmsg.NewTxnMetadataValue()
	v0.Version, v0.ProducerID, v0.State = 0, 4, kmsg.TransactionState(StateEmpty)
	f.Add(r.key, v0.AppendTo(nil))
	tv2 := metadataRecord("tx", snapshot{producerID: 5, lastProducerID: 4, nextProducerID: 6, epoch: 32767, state: StatePrepareCommit, clientTV: TV2, partitions: []TopicPartition{tp("a", 1)}})
	f.Add(tv2.key, tv2.value)
	f.Add(make([]byte, 1<<12), make([]byte, 1<<12))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, s, skip, err := decodeRecord(key, value)
		if err != nil || skip || s == nil {
			return
		}
		// What decodes re-encodes to a record that decodes the same.
		r := metadataRecord(id, *s)
		id2, s2, _, err := decodeRecord(r.key, r.value)
		if err != nil || id2 != id || s2.state != s.state || !slices.Equal(s2.partitions, s.partitions) ||
			s2.lastProducerID != s.lastProducerID || s2.nextProducerID != s.nextProducerID || s2.clientTV != s.clientTV {
			t.Fatalf("re-encode: %q %+v %v", id2, s2, err)
		}
	})
}

func TestLoaderAppliesBatchesInOrder(t *testing.T) {
	codecs := batch.MustCodecs()
	var data []byte
	for i, r := range []record{
		metadataRecord("a", snapshot{producerID: 1, state: StateEmpty}),
		metadataRecord("b", snapshot{producerID: 2, state: StateEmpty}),
		metadataRecord("a", snapshot{producerID: 1, epoch: 1, state: StateOngoing, partitions: []TopicPartition{foo0}}),
		tombstone("b"),
	} {
		b, err := buildBatch(r, time.UnixMilli(0), codecs)
		if err != nil {
			t.Fatal(err)
		}
		batch.SetBaseOffset(b, int64(i))
		data = append(data, b...)
	}
	l := loader{txns: map[string]snapshot{}}
	next, n, err := l.applyBatches(append(data, 0, 0, 0), codecs) // a torn tail is left for the next read
	if err != nil || next != 4 || n != 4 {
		t.Fatalf("apply: next %d n %d err %v", next, n, err)
	}
	if _, ok := l.txns["b"]; ok || l.txns["a"].state != StateOngoing || l.txns["a"].epoch != 1 {
		t.Fatalf("loaded %+v", l.txns)
	}
}
