package replica

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

func TestThrottledPartitions(t *testing.T) {
	tests := []struct {
		entries []string
		all     bool
		want    []int32
	}{
		{nil, false, nil},
		{[]string{"*"}, true, nil},
		{[]string{"0:1", "0:2", "1:2", " 3 : 2 "}, false, []int32{0, 1, 3}},
		{[]string{"0:1", "bad", "x:2", "4:y"}, false, nil},
	}
	for _, tc := range tests {
		all, got := ThrottledPartitions(tc.entries, 2)
		if all != tc.all || !slices.Equal(got, tc.want) {
			t.Errorf("%q: all %v partitions %v, want %v %v", tc.entries, all, got, tc.all, tc.want)
		}
	}
}

func TestQuotaThrottledSet(t *testing.T) {
	q := NewQuota(QuotaConfig{})
	q.SetThrottled("a", false, []int32{1})
	q.SetThrottled("b", true, nil)
	for _, c := range []struct {
		topic string
		p     int32
		want  bool
	}{{"a", 1, true}, {"a", 0, false}, {"b", 7, true}, {"c", 0, false}} {
		if got := q.IsThrottled(c.topic, c.p); got != c.want {
			t.Errorf("%s-%d throttled %v, want %v", c.topic, c.p, got, c.want)
		}
	}
	q.SetThrottled("a", false, nil)
	if q.IsThrottled("a", 1) {
		t.Error("throttle not removed")
	}
	// Unlimited by default: never exceeded, whatever is recorded.
	q.Record(1 << 40)
	if q.Exceeded() || q.ShouldThrottle("b", 0, false) {
		t.Error("an unlimited quota was exceeded")
	}
}

// TestQuotaHoldsRate runs a simulated throttled move: a fetch of up to
// chunk bytes every 10 ms unless ShouldThrottle says wait. Over a minute
// the bytes moved stay within 20% of the rate, and the first seconds'
// burst within the samples-1 windows Kafka's Rate allows.
func TestQuotaHoldsRate(t *testing.T) {
	const rate, chunk = 1 << 20, 64 << 10
	for _, samples := range []int{1, 2, 11} {
		clock := testutil.NewClock(time.Unix(1000, 0))
		q := NewQuota(QuotaConfig{Samples: samples, Window: time.Second, Now: clock.Now})
		q.SetRate(rate)
		q.SetThrottled("t", true, nil)
		var moved int64
		burst := int64(0)
		for step := 0; step < 6000; step++ {
			if !q.ShouldThrottle("t", 0, false) {
				q.Record(chunk)
				moved += chunk
			}
			if step == 99 {
				burst = moved // after 1 s
			}
			// An in-sync replica is never held back, even over the quota.
			if q.ShouldThrottle("t", 0, true) {
				t.Fatal("in-sync replica throttled")
			}
			clock.Advance(10 * time.Millisecond)
		}
		got := float64(moved) / 60
		if got > 1.2*rate || got < 0.8*rate {
			t.Errorf("%d samples: moved %.0f B/s over a minute, want within 20%% of %d", samples, got, rate)
		}
		if limit := int64(max(samples-1, 1))*rate + chunk; burst > limit {
			t.Errorf("%d samples: first second moved %d bytes, want at most %d", samples, burst, limit)
		}
	}
	q := NewQuota(QuotaConfig{})
	q.SetRate(0)
	q.Record(math.MaxInt32)
	if q.Exceeded() {
		t.Error("rate 0 is unlimited, as Kafka's default Long.MAX_VALUE")
	}
}
