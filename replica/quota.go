package replica

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Quota is Kafka's ReplicationQuotaManager, one for the leader side and
// one for the follower side of replication: a byte rate
// ({leader,follower}.replication.throttled.rate) measured over a sliding
// window of samples (replication.quota.window.num of
// replication.quota.window.size.seconds each), and the partitions it
// applies to ({leader,follower}.replication.throttled.replicas of each
// topic, filtered to this broker).
//
// As in Kafka, a throttled replica that is not in sync is left out of a
// fetch while the measured rate exceeds the quota, and every byte fetched
// for a throttled partition is recorded, in sync or not. The rate is the
// bytes of the live samples over their span, counted as at least
// samples-1 windows, so a move may start with a burst of up to that many
// windows' worth; over a longer run it stays within about one window of
// the quota.
type Quota struct {
	now     func() time.Time
	window  time.Duration
	samples int

	mu        sync.Mutex
	rate      int64 // bytes per second; math.MaxInt64: unlimited
	buckets   []quotaSample
	throttled map[string]throttledSet
}

type quotaSample struct {
	start time.Time
	bytes int64
}

type throttledSet struct {
	all        bool
	partitions map[int32]bool
}

// QuotaConfig configures a Quota; zero values take Kafka's defaults (11
// samples of 1 s, unlimited rate, time.Now).
type QuotaConfig struct {
	Samples int
	Window  time.Duration
	Now     func() time.Time
}

// NewQuota returns an unlimited quota that throttles no partition.
func NewQuota(cfg QuotaConfig) *Quota {
	if cfg.Samples < 1 {
		cfg.Samples = 11
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Quota{now: cfg.Now, window: cfg.Window, samples: cfg.Samples, rate: math.MaxInt64, throttled: map[string]throttledSet{}}
}

// SetRate sets the quota in bytes per second; math.MaxInt64 (Kafka's
// default) or less than 1 means unlimited.
func (q *Quota) SetRate(bytesPerSec int64) {
	if bytesPerSec <= 0 {
		bytesPerSec = math.MaxInt64
	}
	q.mu.Lock()
	q.rate = bytesPerSec
	q.mu.Unlock()
}

// SetThrottled sets which of topic's partitions are throttled here: all,
// or the listed ones; none of them removes the topic's throttle.
func (q *Quota) SetThrottled(topic string, all bool, partitions []int32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !all && len(partitions) == 0 {
		delete(q.throttled, topic)
		return
	}
	s := throttledSet{all: all, partitions: map[int32]bool{}}
	for _, p := range partitions {
		s.partitions[p] = true
	}
	q.throttled[topic] = s
}

// IsThrottled reports whether the partition's replication is throttled here.
func (q *Quota) IsThrottled(topic string, partition int32) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := q.throttled[topic]
	return ok && (s.all || s.partitions[partition])
}

// Exceeded reports whether the measured rate is above the quota.
func (q *Quota) Exceeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate == math.MaxInt64 {
		return false
	}
	return q.measuredLocked(q.now()) > float64(q.rate)
}

// ShouldThrottle is Kafka's shouldLeaderThrottle / shouldFollowerThrottle:
// a throttled replica out of sync waits while the quota is exceeded.
func (q *Quota) ShouldThrottle(topic string, partition int32, inSync bool) bool {
	return !inSync && q.IsThrottled(topic, partition) && q.Exceeded()
}

// Record counts bytes fetched for throttled partitions.
func (q *Quota) Record(bytes int64) {
	if bytes <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	q.expireLocked(now)
	if n := len(q.buckets); n > 0 && now.Sub(q.buckets[n-1].start) < q.window {
		q.buckets[n-1].bytes += bytes
		return
	}
	q.buckets = append(q.buckets, quotaSample{start: now, bytes: bytes})
}

// Measured is the rate in bytes per second as the quota sees it.
func (q *Quota) Measured() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.measuredLocked(q.now())
}

// expireLocked drops samples that ended more than samples windows ago.
func (q *Quota) expireLocked(now time.Time) {
	horizon := time.Duration(q.samples) * q.window
	i := 0
	for i < len(q.buckets) && now.Sub(q.buckets[i].start) >= horizon {
		i++
	}
	q.buckets = q.buckets[i:]
}

// measuredLocked is Kafka's Rate: the bytes of the live samples over the
// time since the oldest began, counted as at least samples-1 windows.
func (q *Quota) measuredLocked(now time.Time) float64 {
	q.expireLocked(now)
	if len(q.buckets) == 0 {
		return 0
	}
	var total int64
	for _, b := range q.buckets {
		total += b.bytes
	}
	elapsed := max(now.Sub(q.buckets[0].start), time.Duration(q.samples-1)*q.window, time.Millisecond)
	return float64(total) / elapsed.Seconds()
}

// ThrottledPartitions parses a {leader,follower}.replication.throttled.replicas
// value for broker as Kafka's parseThrottledPartitions does: "*" throttles
// every partition, else the partitions of the "partition:broker" entries
// naming this broker. Malformed entries are skipped (the config table
// rejects them when set).
func ThrottledPartitions(entries []string, broker int32) (all bool, partitions []int32) {
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "*" {
			return true, nil
		}
		ps, bs, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		p, err1 := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		b, err2 := strconv.ParseInt(strings.TrimSpace(bs), 10, 32)
		if err1 == nil && err2 == nil && int32(b) == broker {
			partitions = append(partitions, int32(p))
		}
	}
	return false, partitions
}
