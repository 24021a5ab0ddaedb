package group

import "unicode/utf16"

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... over
// UTF-16 code units, with int32 overflow. Group ids outside the BMP must
// hash as surrogate pairs, or clients and brokers disagree on coordinators.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// partitionFor maps a group id to its __consumer_offsets partition as
// Kafka does: Utils.abs(hashCode) % partitions, where Utils.abs maps
// MinInt32 to 0 instead of overflowing.
func partitionFor(groupID string, partitions int32) int32 {
	h := javaStringHashCode(groupID)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
