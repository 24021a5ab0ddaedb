package metrics

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// latencyBuckets is the number of buckets of a latency histogram: four per
// power of two of microseconds, from 1 µs to about 2.4 hours; a quantile is
// then off by at most a quarter of its value.
const latencyBuckets = 4 + 4*32

// latencyQuantiles are the percentiles of a Yammer histogram that the JMX
// exporter turns into quantile labels ("0.$N" of the NthPercentile
// attribute, so 50th is "0.50" and 999th "0.999").
var latencyQuantiles = [...]struct {
	q     float64
	label string
}{{0.50, "0.50"}, {0.75, "0.75"}, {0.95, "0.95"}, {0.98, "0.98"}, {0.99, "0.99"}, {0.999, "0.999"}}

// latency counts durations in fixed buckets with atomic adds: recording
// allocates nothing and takes no lock.
type latency struct {
	buckets [latencyBuckets]atomic.Uint64
}

func latencyBucket(d time.Duration) int {
	us := uint64(max(d.Microseconds(), 0))
	if us < 4 {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us is in [2^e, 2^(e+1))
	i := 4 + (e-2)*4 + int(us>>(e-2)&3)
	return min(i, latencyBuckets-1)
}

// bucketUpperMs is the upper edge of bucket i in milliseconds.
func bucketUpperMs(i int) float64 {
	if i < 4 {
		return float64(i+1) / 1000
	}
	e, sub := (i-4)/4+2, (i-4)%4
	return float64(uint64(4+sub+1)<<(e-2)) / 1000
}

func (l *latency) observe(d time.Duration) { l.buckets[latencyBucket(d)].Add(1) }

// latencySnapshot is a copy of a histogram's bucket counts.
type latencySnapshot [latencyBuckets]uint64

func (l *latency) snapshot(s *latencySnapshot) {
	for i := range l.buckets {
		s[i] = l.buckets[i].Load()
	}
}

// count is the number of observations in s.
func (s *latencySnapshot) count() uint64 {
	var n uint64
	for _, c := range s {
		n += c
	}
	return n
}

// quantile is the upper edge, in milliseconds, of the bucket holding the
// q-th quantile of the observations in now minus since; 0 when none.
func quantile(now, since *latencySnapshot, q float64) float64 {
	var n uint64
	for i := range now {
		n += now[i] - since[i]
	}
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.999999)
	var seen uint64
	for i := range now {
		seen += now[i] - since[i]
		if seen >= max(rank, 1) {
			return bucketUpperMs(i)
		}
	}
	return bucketUpperMs(latencyBuckets - 1)
}
