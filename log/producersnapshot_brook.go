package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Brook's own producer snapshot format, written before Brook wrote
// Kafka's (producersnapshot.go) and still read from older log dirs:
//
//	magic "BRPS" (4) | version uint16 = 2 | crc32c uint32 of the rest | count uint32
//	per producer: producerId int64 | epoch int16 | lastTimestamp int64 |
//	  coordinatorEpoch int32 | currentTxnFirstOffset int64 | batches uint8
//	  per batch: firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 | timestamp int64
//
// Version 1 (before transactions) lacks coordinatorEpoch and
// currentTxnFirstOffset; it is still read, as -1 for both.
const (
	brookSnapshotMagic         = "BRPS"
	brookSnapshotVersion       = 2
	brookSnapshotVersionNoTxn  = 1
	brookSnapshotHeaderSize    = 14
	brookSnapshotProducerLen   = 31
	brookSnapshotProducerLenV1 = 19
	brookSnapshotBatchLen      = 32
)

// decodeBrookSnapshot reads a snapshot in Brook's former format.
func decodeBrookSnapshot(b []byte) (*producerState, error) {
	if len(b) < brookSnapshotHeaderSize || string(b[:4]) != brookSnapshotMagic {
		return nil, fmt.Errorf("%w: producer snapshot: bad magic", ErrCorrupt)
	}
	version := binary.BigEndian.Uint16(b[4:])
	entryLen := brookSnapshotProducerLen
	switch version {
	case brookSnapshotVersion:
	case brookSnapshotVersionNoTxn:
		entryLen = brookSnapshotProducerLenV1
	default:
		return nil, fmt.Errorf("%w: producer snapshot: version %d", ErrCorrupt, version)
	}
	if crc := crc32.Checksum(b[10:], castagnoli); crc != binary.BigEndian.Uint32(b[6:]) {
		return nil, fmt.Errorf("%w: producer snapshot: crc mismatch", ErrCorrupt)
	}
	n := binary.BigEndian.Uint32(b[10:])
	ps := newProducerState()
	p := b[brookSnapshotHeaderSize:]
	for i := uint32(0); i < n; i++ {
		if len(p) < entryLen {
			return nil, fmt.Errorf("%w: producer snapshot: truncated at producer %d", ErrCorrupt, i)
		}
		id := int64(binary.BigEndian.Uint64(p))
		e := newProducerEntry(int16(binary.BigEndian.Uint16(p[8:])))
		e.LastTimestamp = int64(binary.BigEndian.Uint64(p[10:]))
		if version == brookSnapshotVersion {
			e.CoordinatorEpoch = int32(binary.BigEndian.Uint32(p[18:]))
			e.CurrentTxnFirstOffset = int64(binary.BigEndian.Uint64(p[22:]))
			if e.CurrentTxnFirstOffset < -1 {
				return nil, fmt.Errorf("%w: producer snapshot: producer %d transaction at offset %d", ErrCorrupt, id, e.CurrentTxnFirstOffset)
			}
		}
		nb := int(p[entryLen-1])
		p = p[entryLen:]
		if nb > producerBatchesToRetain || len(p) < nb*brookSnapshotBatchLen {
			return nil, fmt.Errorf("%w: producer snapshot: producer %d has %d batches", ErrCorrupt, id, nb)
		}
		for j := 0; j < nb; j++ {
			pb := producerBatch{
				FirstSeq:    int32(binary.BigEndian.Uint32(p)),
				LastSeq:     int32(binary.BigEndian.Uint32(p[4:])),
				FirstOffset: int64(binary.BigEndian.Uint64(p[8:])),
				LastOffset:  int64(binary.BigEndian.Uint64(p[16:])),
				Timestamp:   int64(binary.BigEndian.Uint64(p[24:])),
			}
			// Offsets a batch cannot have would not survive Kafka's
			// format, which stores the last offset and the distance.
			if pb.FirstOffset < 0 || pb.LastOffset < pb.FirstOffset || pb.LastOffset-pb.FirstOffset > math.MaxInt32 {
				return nil, fmt.Errorf("%w: producer snapshot: producer %d batch at offsets %d..%d", ErrCorrupt, id, pb.FirstOffset, pb.LastOffset)
			}
			e.Batches = append(e.Batches, pb)
			p = p[brookSnapshotBatchLen:]
		}
		if _, dup := ps.producers[id]; dup {
			return nil, fmt.Errorf("%w: producer snapshot: producer %d twice", ErrCorrupt, id)
		}
		ps.producers[id] = e
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: producer snapshot: %d trailing bytes", ErrCorrupt, len(p))
	}
	return ps, nil
}
