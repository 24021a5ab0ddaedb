package log

import "testing"

func TestEpochCache(t *testing.T) {
	var c epochCache
	for _, e := range []epochEntry{{1, 0}, {1, 5}, {3, 10}, {4, 20}} {
		c.assign(e.Epoch, e.StartOffset)
	}
	want := []epochEntry{{1, 0}, {3, 10}, {4, 20}}
	if got := c.snapshot(); !equalEpochs(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	cases := []struct {
		req    int32
		epoch  int32
		offset int64
	}{
		{-1, -1, -1},
		{0, 0, 0},  // below all: requested epoch, first start offset
		{1, 1, 10}, // next epoch 3 starts at 10
		{2, 1, 10}, // unknown epoch between: floor epoch, next start
		{3, 3, 20},
		{4, 4, 30}, // latest: log end offset
		{5, -1, -1},
	}
	for _, tc := range cases {
		if e, o := c.endOffsetFor(tc.req, 30); e != tc.epoch || o != tc.offset {
			t.Errorf("endOffsetFor(%d) = %d, %d; want %d, %d", tc.req, e, o, tc.epoch, tc.offset)
		}
	}
	// A lower epoch at a later offset (a new leader with an older view)
	// drops the entries it contradicts, as Kafka's assign does.
	c2 := epochCache{entries: append([]epochEntry(nil), want...)}
	c2.assign(2, 15)
	if got := c2.snapshot(); !equalEpochs(got, []epochEntry{{1, 0}, {2, 15}}) {
		t.Fatalf("non-monotonic assign: %v", got)
	}
	c.truncateFromEnd(20)
	if got := c.snapshot(); !equalEpochs(got, []epochEntry{{1, 0}, {3, 10}}) {
		t.Fatalf("truncateFromEnd: %v", got)
	}
	c.truncateFromStart(12)
	if got := c.snapshot(); !equalEpochs(got, []epochEntry{{3, 12}}) {
		t.Fatalf("truncateFromStart: %v", got)
	}
	if c.epochFor(11) != -1 || c.epochFor(12) != 3 || c.epochFor(1000) != 3 {
		t.Fatalf("epochFor wrong")
	}
}

func equalEpochs(a, b []epochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
