package batch

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Kafka before magic 1 wrote LZ4 frames with a wrong header checksum: the
// HC byte of the frame descriptor hashed the 4-byte magic number too
// (KAFKA-3160; librdkafka does the same for magic 0). Kafka reads magic 0
// frames without checking that byte; Brook's LZ4 reader checks it, so
// fixLegacyLZ4 rewrites it with the correct value first.
//
//	offset  size  field
//	0       4     magic 0x184D2204 (little endian)
//	4       1     FLG  (bit 3: content size present, bit 0: dictionary id)
//	5       1     BD
//	6       0/8   content size
//	..      0/4   dictionary id
//	..      1     HC = (xxh32(FLG..dictionary id, seed 0) >> 8) & 0xff
var lz4FrameMagic = []byte{0x04, 0x22, 0x4d, 0x18}

// fixLegacyLZ4 returns frame with a correct header checksum, copied if it
// had to change; anything that is not an LZ4 frame is returned as is, for
// the reader to reject.
func fixLegacyLZ4(frame []byte) []byte {
	if len(frame) < 7 || !bytes.Equal(frame[:4], lz4FrameMagic) {
		return frame
	}
	descLen := 2
	if frame[4]&0x08 != 0 {
		descLen += 8
	}
	if frame[4]&0x01 != 0 {
		descLen += 4
	}
	hcAt := 4 + descLen
	if len(frame) <= hcAt {
		return frame
	}
	hc := byte(xxh32Small(frame[4:hcAt]) >> 8)
	if frame[hcAt] == hc {
		return frame
	}
	fixed := bytes.Clone(frame)
	fixed[hcAt] = hc
	return fixed
}

// xxh32Small is XXH32 with seed 0 for inputs under 16 bytes, all that a
// frame descriptor needs.
func xxh32Small(b []byte) uint32 {
	const (
		prime1 uint32 = 2654435761
		prime2 uint32 = 2246822519
		prime3 uint32 = 3266489917
		prime4 uint32 = 668265263
		prime5 uint32 = 374761393
	)
	h := prime5 + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * prime3
		h = bits.RotateLeft32(h, 17) * prime4
	}
	for _, c := range b {
		h += uint32(c) * prime5
		h = bits.RotateLeft32(h, 11) * prime1
	}
	h ^= h >> 15
	h *= prime2
	h ^= h >> 13
	h *= prime3
	h ^= h >> 16
	return h
}
