package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// Producer snapshot file (<offset>.snapshot) in Kafka's format
// (ProducerStateManager's PID_SNAPSHOT_MAP_SCHEMA, version 1), so that
// Kafka opens a log dir Brook wrote and Brook one Kafka wrote:
//
//	version int16 = 1 | crc uint32 (CRC-32C of every byte after it) | count int32
//	count times, 46 bytes:
//	  producerId int64 | epoch int16 | lastSequence int32 | lastOffset int64 |
//	  offsetDelta int32 | timestamp int64 | coordinatorEpoch int32 |
//	  currentTxnFirstOffset int64
//
// As in Kafka, a snapshot holds only each producer's last batch
// (lastSequence and lastOffset of its end, offsetDelta its last offset
// minus its first, whose sequences are as far apart); lastOffset is -1 (and
// lastSequence -1, offsetDelta 0) for a producer with no batch left, only
// markers. timestamp is the producer's last timestamp, and the batch's.
// The older batches Brook keeps for duplicate detection are rebuilt, as
// Kafka does, only by replaying the log after the snapshot.
const (
	kafkaSnapshotVersion   = 1
	kafkaSnapshotHeaderLen = 10
	kafkaSnapshotEntryLen  = 46
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (ps *producerState) encode() []byte {
	ids := make([]int64, 0, len(ps.producers))
	for id := range ps.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := make([]byte, kafkaSnapshotHeaderLen, kafkaSnapshotHeaderLen+len(ids)*kafkaSnapshotEntryLen)
	binary.BigEndian.PutUint16(b, kafkaSnapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(ids)))
	for _, id := range ids {
		e := ps.producers[id]
		lastSeq, lastOffset, delta := int32(-1), int64(-1), int32(0)
		if n := len(e.Batches); n > 0 {
			last := e.Batches[n-1]
			lastSeq, lastOffset, delta = last.LastSeq, last.LastOffset, int32(last.LastOffset-last.FirstOffset)
		}
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(lastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(delta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// decodeProducerSnapshot reads a snapshot in Kafka's format, or in the
// format Brook wrote before it (magic "BRPS"), which log dirs of older
// Brooks still hold.
func decodeProducerSnapshot(b []byte) (*producerState, error) {
	if len(b) >= len(brookSnapshotMagic) && string(b[:len(brookSnapshotMagic)]) == brookSnapshotMagic {
		return decodeBrookSnapshot(b)
	}
	if len(b) < kafkaSnapshotHeaderLen {
		return nil, fmt.Errorf("%w: producer snapshot: %d bytes", ErrCorrupt, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != kafkaSnapshotVersion {
		return nil, fmt.Errorf("%w: producer snapshot: version %d", ErrCorrupt, v)
	}
	if crc := crc32.Checksum(b[6:], castagnoli); crc != binary.BigEndian.Uint32(b[2:]) {
		return nil, fmt.Errorf("%w: producer snapshot: crc mismatch", ErrCorrupt)
	}
	n := int32(binary.BigEndian.Uint32(b[6:]))
	p := b[kafkaSnapshotHeaderLen:]
	if n < 0 || int64(len(p)) != int64(n)*kafkaSnapshotEntryLen {
		return nil, fmt.Errorf("%w: producer snapshot: %d producers in %d bytes", ErrCorrupt, n, len(p))
	}
	ps := newProducerState()
	for ; len(p) > 0; p = p[kafkaSnapshotEntryLen:] {
		id := int64(binary.BigEndian.Uint64(p))
		e := newProducerEntry(int16(binary.BigEndian.Uint16(p[8:])))
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(p[14:]))
		delta := int32(binary.BigEndian.Uint32(p[22:]))
		e.LastTimestamp = int64(binary.BigEndian.Uint64(p[26:]))
		e.CoordinatorEpoch = int32(binary.BigEndian.Uint32(p[34:]))
		// Kafka takes any negative first offset as no transaction.
		e.CurrentTxnFirstOffset = max(int64(binary.BigEndian.Uint64(p[38:])), -1)
		if lastOffset >= 0 {
			if delta < 0 || int64(delta) > lastOffset {
				return nil, fmt.Errorf("%w: producer snapshot: producer %d last batch ends at offset %d sequence %d, %d long", ErrCorrupt, id, lastOffset, lastSeq, delta)
			}
			e.Batches = []producerBatch{{
				FirstSeq: decrementSequence(lastSeq, delta), LastSeq: lastSeq,
				FirstOffset: lastOffset - int64(delta), LastOffset: lastOffset, Timestamp: e.LastTimestamp,
			}}
		}
		if _, dup := ps.producers[id]; dup {
			return nil, fmt.Errorf("%w: producer snapshot: producer %d twice", ErrCorrupt, id)
		}
		ps.producers[id] = e
	}
	return ps, nil
}

// decrementSequence is Kafka's DefaultRecordBatch.decrementSequence: the
// sequence delta before seq, wrapping below 0 to MaxInt32.
func decrementSequence(seq, delta int32) int32 {
	if seq < delta {
		return math.MaxInt32 - (delta - seq) + 1
	}
	return seq - delta
}
