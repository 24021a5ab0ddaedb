package txn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// metadataRecord is the __transaction_state record of a transactional id in
// state t, as Kafka writes it once transaction.version is 1 or more (Brook
// finalizes 2): key v0, value v1, flexible, whose tagged fields carry the
// previous and next producer ids and the client's transaction version.
// Kafka does not store the last epoch; neither does Brook.
func metadataRecord(txnID string, t snapshot) record {
	key := kmsg.NewTxnMetadataKey()
	key.Version = 0
	key.TransactionalID = txnID
	val := kmsg.NewTxnMetadataValue()
	val.Version = 1
	val.PreviousProducerID = t.lastProducerID
	val.NextProducerID = t.nextProducerID
	val.ClientTransactionVersion = t.clientTV
	val.ProducerID = t.producerID
	val.ProducerEpoch = t.epoch
	val.TimeoutMillis = t.timeoutMs
	val.State = kmsg.TransactionState(t.state)
	val.LastUpdateTimestamp = t.lastUpdateMs
	val.StartTimestamp = t.startMs
	for i := 0; i < len(t.partitions); {
		topic := kmsg.NewTxnMetadataValueTopic()
		topic.Topic = t.partitions[i].Topic
		for ; i < len(t.partitions) && t.partitions[i].Topic == topic.Topic; i++ {
			topic.Partitions = append(topic.Partitions, t.partitions[i].Partition)
		}
		val.Topics = append(val.Topics, topic)
	}
	if t.state != StateEmpty && val.Topics == nil {
		// Kafka writes a null partition list for Empty only.
		val.Topics = []kmsg.TxnMetadataValueTopic{}
	}
	return record{key: key.AppendTo(nil), value: val.AppendTo(nil)}
}

func tombstone(txnID string) record {
	key := kmsg.NewTxnMetadataKey()
	key.TransactionalID = txnID
	return record{key: key.AppendTo(nil)}
}

// buildBatch makes the uncompressed v2 batch the coordinator appends, as
// Kafka's TransactionStateManager does (it enforces no compression).
func buildBatch(r record, now time.Time, codecs *batch.Codecs) ([]byte, error) {
	b, err := batch.Build(batch.BuildOptions{
		PartitionLeaderEpoch: batch.NoPartitionLeader,
		Compression:          batch.None,
		BaseTimestamp:        now.UnixMilli(),
	}, []batch.Record{{Key: r.key, Value: r.value}}, codecs)
	if err != nil {
		return nil, fmt.Errorf("build transaction state batch: %w", err)
	}
	return b, nil
}

// decodeRecord turns one record into the id it describes and its
// snapshot; nil for a tombstone. Key versions other than 0 are not
// transaction metadata and are reported as skip.
func decodeRecord(key, value []byte) (txnID string, s *snapshot, skip bool, err error) {
	if len(key) < 2 {
		return "", nil, false, fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(key))
	}
	// Decoded structs may alias their input, and batches are reused.
	key, value = bytes.Clone(key), bytes.Clone(value)
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return "", nil, true, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, false, fmt.Errorf("%w: key: %v", ErrCorrupt, err)
	}
	if value == nil {
		return k.TransactionalID, nil, false, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, false, fmt.Errorf("%w: value of %q: %v", ErrCorrupt, k.TransactionalID, err)
	}
	st := State(v.State)
	// Dead and PrepareEpochFence are never written; a record saying so
	// comes from a broken writer.
	if st < StateEmpty || st > StateCompleteAbort {
		return "", nil, false, fmt.Errorf("%w: %q in state %d", ErrCorrupt, k.TransactionalID, v.State)
	}
	s = &snapshot{
		producerID: v.ProducerID, lastProducerID: noProducerID,
		epoch: v.ProducerEpoch, lastEpoch: noProducerEpoch,
		timeoutMs: v.TimeoutMillis, state: st,
		startMs: v.StartTimestamp, lastUpdateMs: v.LastUpdateTimestamp,
		nextProducerID: noProducerID,
	}
	if v.Version >= 1 {
		s.lastProducerID, s.nextProducerID, s.clientTV = v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			s.partitions = append(s.partitions, TopicPartition{t.Topic, p})
		}
	}
	slices.SortFunc(s.partitions, compareTP)
	s.partitions = slices.Compact(s.partitions)
	return k.TransactionalID, s, false, nil
}

// loader replays __transaction_state: later records win, tombstones remove.
type loader struct {
	txns map[string]snapshot
}

// applyBatches replays whole batches as Partition.Read returns them and
// reports the offset after the last complete batch and how many it read.
// Control batches (markers) carry no transaction state.
func (l *loader) applyBatches(data []byte, codecs *batch.Codecs) (next int64, n int, err error) {
	next, n, err = batch.EachBatch(data, func(h *batch.Header, b []byte) error {
		if h.Control() {
			return nil
		}
		return batch.EachKeyedRecord(b, codecs, l.applyRecord)
	})
	if err != nil {
		err = fmt.Errorf("transaction state: %w", err)
	}
	return next, n, err
}

// applyRecord replays one __transaction_state record.
func (l *loader) applyRecord(key, value []byte) error {
	id, s, skip, err := decodeRecord(key, value)
	switch {
	case err != nil:
		return err
	case skip:
	case s == nil:
		delete(l.txns, id)
	default:
		l.txns[id] = *s
	}
	return nil
}
