package log

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
)

// offsetMapEntrySize is Kafka's SkimpyOffsetMap entry: an MD5 hash of the
// key (16 bytes) and the latest offset seen for it (8 bytes).
const (
	offsetMapHashSize  = md5.Size
	offsetMapEntrySize = offsetMapHashSize + 8
	offsetMapMinSlots  = 1024
)

// offsetMap maps key hashes to the latest offset of the key, in a flat
// open-addressing table as Kafka's SkimpyOffsetMap: keys are not stored,
// only their MD5, so two keys with equal hashes count as one (a chance of
// about 2^-64 per pair, which Kafka accepts too).
//
// Memory is bounded by log.cleaner.dedupe.buffer.size / log.cleaner.threads:
// the table starts small and doubles up to that many bytes, and accepts
// entries only while it is below log.cleaner.io.buffer.load.factor of its
// largest size; past that, put reports full and the cleaner cleans only up
// to the last offset that fit.
//
// Invariant: entries <= slots*loadFactor, slots <= maxSlots; an all-zero
// hash marks an empty slot.
type offsetMap struct {
	maxSlots   int
	loadFactor float64
	slots      int
	table      []byte // slots * offsetMapEntrySize
	entries    int
	// latestOffset is the largest offset put (or passed over) so far, -1
	// when none: Kafka's latestOffset, the last offset the map covers.
	latestOffset int64
	hash         [offsetMapHashSize]byte
}

// newOffsetMap sizes a map to use at most memory bytes.
func newOffsetMap(memory int64, loadFactor float64) *offsetMap {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = 0.9
	}
	maxSlots := int(max(memory/offsetMapEntrySize, 2))
	m := &offsetMap{maxSlots: maxSlots, loadFactor: loadFactor}
	m.resize(min(maxSlots, offsetMapMinSlots))
	m.clear()
	return m
}

// maxEntries is how many keys the map holds at its largest.
// One slot always stays empty so that probing ends.
func (m *offsetMap) maxEntries() int {
	return max(min(int(float64(m.maxSlots)*m.loadFactor), m.maxSlots-1), 1)
}

// memoryBytes is the size of the table now.
func (m *offsetMap) memoryBytes() int64 { return int64(len(m.table)) }

// maxMemoryBytes is the most the table may grow to.
func (m *offsetMap) maxMemoryBytes() int64 { return int64(m.maxSlots) * offsetMapEntrySize }

func (m *offsetMap) size() int { return m.entries }

// clear empties the map, keeping its table for the next cleaning.
func (m *offsetMap) clear() {
	clear(m.table)
	m.entries = 0
	m.latestOffset = -1
}

// full reports whether a new key would exceed the map's bound.
func (m *offsetMap) full() bool { return m.entries >= m.maxEntries() }

// put records offset as the latest of key. It returns false, changing
// nothing, when key is new and the map is full. Offsets must not decrease.
func (m *offsetMap) put(key []byte, offset int64) bool {
	m.hashKey(key)
	slot, found := m.find(m.hash[:])
	if !found {
		if m.full() {
			return false
		}
		if (float64(m.entries+1) > float64(m.slots)*m.loadFactor || m.entries+1 >= m.slots) && m.slots < m.maxSlots {
			m.resize(min(m.slots*2, m.maxSlots))
			slot, _ = m.find(m.hash[:])
		}
		copy(m.table[slot*offsetMapEntrySize:], m.hash[:])
		m.entries++
	}
	binary.BigEndian.PutUint64(m.table[slot*offsetMapEntrySize+offsetMapHashSize:], uint64(offset))
	m.latestOffset = max(m.latestOffset, offset)
	return true
}

// get returns the latest offset of key, or -1.
func (m *offsetMap) get(key []byte) int64 {
	m.hashKey(key)
	slot, found := m.find(m.hash[:])
	if !found {
		return -1
	}
	return int64(binary.BigEndian.Uint64(m.table[slot*offsetMapEntrySize+offsetMapHashSize:]))
}

// updateLatestOffset notes that the map covers offsets up to o.
func (m *offsetMap) updateLatestOffset(o int64) { m.latestOffset = max(m.latestOffset, o) }

func (m *offsetMap) hashKey(key []byte) {
	m.hash = md5.Sum(key)
	if m.hash == ([offsetMapHashSize]byte{}) {
		// The all-zero hash marks empty slots; nudge the (astronomically
		// unlikely) key that hashes to it.
		m.hash[0] = 1
	}
}

// find returns the slot holding hash, or the empty slot where it belongs.
// Probing reads successive 4-byte windows of the hash and then steps
// linearly, as Kafka's positionOf.
func (m *offsetMap) find(hash []byte) (int, bool) {
	var zero [offsetMapHashSize]byte
	for attempt := 0; ; attempt++ {
		w := min(attempt, offsetMapHashSize-4)
		probe := int64(binary.BigEndian.Uint32(hash[w:])) + int64(max(0, attempt-offsetMapHashSize+4))
		slot := int(probe % int64(m.slots))
		e := m.table[slot*offsetMapEntrySize : slot*offsetMapEntrySize+offsetMapHashSize]
		if bytes.Equal(e, hash) {
			return slot, true
		}
		if bytes.Equal(e, zero[:]) {
			return slot, false
		}
	}
}

// resize rehashes into a table of n slots (n >= entries/loadFactor).
func (m *offsetMap) resize(n int) {
	old := m.table
	m.slots = n
	m.table = make([]byte, n*offsetMapEntrySize)
	var zero [offsetMapHashSize]byte
	for i := 0; i+offsetMapEntrySize <= len(old); i += offsetMapEntrySize {
		h := old[i : i+offsetMapHashSize]
		if bytes.Equal(h, zero[:]) {
			continue
		}
		slot, _ := m.find(h)
		copy(m.table[slot*offsetMapEntrySize:], old[i:i+offsetMapEntrySize])
	}
}
