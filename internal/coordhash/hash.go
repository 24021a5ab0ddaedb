// Package coordhash maps coordinator keys (group ids, transactional ids)
// to partitions of __consumer_offsets and __transaction_state exactly as
// Kafka does, so that clients and every broker agree on a coordinator.
package coordhash

import "unicode/utf16"

// JavaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... over
// UTF-16 code units, with int32 overflow. Keys outside the BMP must
// hash as surrogate pairs, or clients and brokers disagree on coordinators.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// PartitionFor maps a key to its partition of a coordinator topic as
// Kafka does: Utils.abs(hashCode) % partitions, where Utils.abs maps
// MinInt32 to 0 instead of overflowing.
func PartitionFor(key string, partitions int32) int32 {
	h := JavaStringHashCode(key)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
