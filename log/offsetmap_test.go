package log

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestOffsetMapAgainstModel puts random keys with increasing offsets and
// checks every key against a Go map, through several resizes.
func TestOffsetMapAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := newOffsetMap(1<<20, 0.9)
	model := map[string]int64{}
	for o := int64(0); o < 20000; o++ {
		k := fmt.Sprintf("key-%d", rng.IntN(5000))
		if !m.put([]byte(k), o) {
			t.Fatalf("put %q at %d: full with %d entries", k, o, m.size())
		}
		model[k] = o
	}
	if m.size() != len(model) {
		t.Fatalf("size %d, model %d", m.size(), len(model))
	}
	for k, o := range model {
		if got := m.get([]byte(k)); got != o {
			t.Fatalf("get %q = %d, want %d", k, got, o)
		}
	}
	if got := m.get([]byte("absent")); got != -1 {
		t.Fatalf("absent key: %d", got)
	}
	if m.latestOffset != 19999 {
		t.Fatalf("latest offset %d", m.latestOffset)
	}
	m.clear()
	if m.size() != 0 || m.get([]byte("key-1")) != -1 || m.latestOffset != -1 {
		t.Fatalf("clear left entries")
	}
}

// TestOffsetMapBounded: a map of N bytes takes floor(N/24 * 0.9) keys, as
// Kafka's SkimpyOffsetMap, refuses the next new key, still updates known
// keys, and never grows past its memory.
func TestOffsetMapBounded(t *testing.T) {
	const memory = 24 * 1000
	m := newOffsetMap(memory, 0.9)
	n := 0
	for ; m.put([]byte(fmt.Sprint(n)), int64(n)); n++ {
	}
	if n != 900 {
		t.Fatalf("took %d keys, want 900", n)
	}
	if !m.full() {
		t.Fatal("not full after refusing a key")
	}
	if !m.put([]byte("0"), 5000) || m.get([]byte("0")) != 5000 {
		t.Fatal("known key not updated when full")
	}
	if m.memoryBytes() > memory {
		t.Fatalf("table of %d bytes, bound %d", m.memoryBytes(), memory)
	}
	if m.get([]byte("899")) != 899 {
		t.Fatal("last key lost")
	}
}
