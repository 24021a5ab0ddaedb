package coordhash

import (
	"math/rand/v2"
	"testing"
	"unicode/utf16"
)

func TestJavaStringHashCode(t *testing.T) {
	cases := []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"hello", 99162322},
		// Java's famous string whose hashCode is Integer.MIN_VALUE.
		{"polygenelubricants", -1 << 31},
		// U+1F600 is the surrogate pair D83D DE00 in UTF-16.
		{"\U0001F600", 0xD83D*31 + 0xDE00},
		{"é", 0xE9},
	}
	for _, tc := range cases {
		if got := JavaStringHashCode(tc.s); got != tc.want {
			t.Errorf("hash(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestPartitionForEdgeCases(t *testing.T) {
	// Utils.abs(MinInt32) is 0, so this group lands on partition 0.
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Fatalf("partition %d, want 0", p)
	}
	if p := PartitionFor("hello", 50); p != 99162322%50 {
		t.Fatalf("partition %d", p)
	}
}

// naivePartition recomputes Kafka's mapping with 64-bit arithmetic and an
// explicit reduction mod 2^32.
func naivePartition(s string, n int32) int32 {
	var h uint32
	for _, u := range utf16.Encode([]rune(s)) {
		h = h*31 + uint32(u)
	}
	v := int64(int32(h))
	if v == -1<<31 {
		v = 0
	}
	if v < 0 {
		v = -v
	}
	return int32(v % int64(n))
}

func TestPartitionForMatchesNaiveModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcXYZ09-_.é漢\U0001F600")
	for i := 0; i < 5000; i++ {
		rs := make([]rune, r.IntN(40))
		for j := range rs {
			rs[j] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(rs)
		n := int32(1 + r.IntN(200))
		if got, want := PartitionFor(s, n), naivePartition(s, n); got != want {
			t.Fatalf("PartitionFor(%q, %d) = %d, want %d", s, n, got, want)
		}
	}
}
