package testutil

import (
	"encoding/binary"
	"hash/crc32"
)

// LegacyMessage is one message of a magic 0 or 1 message set, the format
// of Produce v0-2 (see protocol/batch/legacy.go for the layout).
type LegacyMessage struct {
	Offset     int64
	Attributes int8  // codec in bits 0-2; LogAppendTime in bit 3 (magic 1)
	Timestamp  int64 // written for magic 1 only
	Key, Value []byte
}

// AppendLegacyMessage appends m in the given magic with a correct CRC, as an
// old producer writes it. A compressed wrapper is a message whose
// Attributes name a codec and whose Value is the compressed message set of
// its inner messages; the caller compresses, so this stays independent of
// the code under test.
func AppendLegacyMessage(dst []byte, magic int8, m LegacyMessage) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(m.Offset))
	sizeAt := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // messageSize, crc
	crcFrom := len(dst)
	dst = append(dst, byte(magic), byte(m.Attributes))
	if magic > 0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Timestamp))
	}
	for _, field := range [][]byte{m.Key, m.Value} {
		if field == nil {
			dst = binary.BigEndian.AppendUint32(dst, 0xffffffff)
			continue
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(field)))
		dst = append(dst, field...)
	}
	binary.BigEndian.PutUint32(dst[sizeAt:], uint32(len(dst)-sizeAt-4))
	binary.BigEndian.PutUint32(dst[sizeAt+4:], crc32.ChecksumIEEE(dst[crcFrom:]))
	return dst
}

// LegacyMessageSet encodes msgs as a message set of magic, with offsets
// 0..n-1. When codec (the attributes' codec id) is not 0 they are wrapped
// in one compressed message, compressed by compress, carrying the last
// inner offset and timestamp as producers write it.
func LegacyMessageSet(magic, codec int8, msgs []LegacyMessage, compress func([]byte) ([]byte, error)) ([]byte, error) {
	var set []byte
	for i, m := range msgs {
		m.Offset = int64(i)
		set = AppendLegacyMessage(set, magic, m)
	}
	if codec == 0 || len(msgs) == 0 {
		return set, nil
	}
	value, err := compress(set)
	if err != nil {
		return nil, err
	}
	last := msgs[len(msgs)-1]
	return AppendLegacyMessage(nil, magic, LegacyMessage{
		Offset: int64(len(msgs) - 1), Attributes: codec, Timestamp: last.Timestamp, Value: value,
	}), nil
}
