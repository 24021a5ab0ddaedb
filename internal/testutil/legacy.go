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
