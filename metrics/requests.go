package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// maxKey bounds the API keys counted; a larger key (none exists in
	// Kafka 4.x) is not counted.
	maxKey = 96
	// maxVersion bounds the versions counted per key.
	maxVersion = 32
	// fetchFollowerSlot holds Fetch requests from followers: Kafka's
	// RequestMetrics names a Fetch "FetchConsumer" or "FetchFollower",
	// never "Fetch".
	fetchFollowerSlot = maxKey
	slots             = maxKey + 1
	fetchKey          = 1
	// latencyWindow is how far back latency quantiles look: between one
	// and two windows, as Kafka's histograms favour the last five minutes.
	latencyWindow = 5 * time.Minute
)

// Requests counts requests by API key and version and times them from
// receipt to the response written (Kafka's TotalTimeMs).
type Requests struct {
	counts  [slots][maxVersion + 1]atomic.Uint64
	latency [slots]latency

	now func() time.Time
	// mu guards the windows, which only scrapes touch.
	mu      sync.Mutex
	windows [slots]latencyWindows
}

// latencyWindows are two snapshots of a histogram; quantiles are read over
// what was observed since the older one.
type latencyWindows struct {
	older, newer latencySnapshot
	newerAt      time.Time
}

func newRequests(now func() time.Time) *Requests { return &Requests{now: now} }

// RequestSlot names the metrics row of one request.
type RequestSlot int16

// NoSlot is the slot of a request that is not counted.
const NoSlot RequestSlot = -1

// Received counts a request and returns its slot for Completed. A Fetch
// from a follower (replica id >= 0) is counted as FetchFollower.
func (r *Requests) Received(key, version int16, fromFollower bool) RequestSlot {
	if r == nil || key < 0 || key >= maxKey || version < 0 || version > maxVersion {
		return NoSlot
	}
	slot := key
	if key == fetchKey && fromFollower {
		slot = fetchFollowerSlot
	}
	r.counts[slot][version].Add(1)
	return RequestSlot(slot)
}

// Completed records how long a request took, from receipt to response.
func (r *Requests) Completed(slot RequestSlot, d time.Duration) {
	if r == nil || slot < 0 {
		return
	}
	r.latency[slot].observe(d)
}

func slotName(slot int) string {
	switch slot {
	case fetchKey:
		return "FetchConsumer"
	case fetchFollowerSlot:
		return "FetchFollower"
	}
	return requestName(int16(slot))
}

var (
	requestsDesc = prometheus.NewDesc("kafka_network_requestmetrics_requests_total",
		"Requests received (kafka.network:type=RequestMetrics,name=RequestsPerSec,request=R,version=V).",
		[]string{"request", "version"}, nil)
	totalTimeDesc = prometheus.NewDesc("kafka_network_requestmetrics_totaltimems",
		"Request time from receipt to response sent, in ms, by percentile (kafka.network:type=RequestMetrics,name=TotalTimeMs,request=R).",
		[]string{"request", "quantile"}, nil)
	totalTimeCountDesc = prometheus.NewDesc("kafka_network_requestmetrics_totaltimems_count",
		"Requests timed (kafka.network:type=RequestMetrics,name=TotalTimeMs,request=R Count).",
		[]string{"request"}, nil)
)

// versionLabels are the version label values, made once.
var versionLabels = func() (v [maxVersion + 1]string) {
	for i := range v {
		v[i] = strconv.Itoa(i)
	}
	return v
}()

func (r *Requests) describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- totalTimeDesc
	ch <- totalTimeCountDesc
}

func (r *Requests) collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var cur latencySnapshot
	for slot := range slots {
		name := ""
		for v := range r.counts[slot] {
			if n := r.counts[slot][v].Load(); n > 0 {
				if name == "" {
					name = slotName(slot)
				}
				ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), name, versionLabels[v])
			}
		}
		r.latency[slot].snapshot(&cur)
		n := cur.count()
		if n == 0 {
			continue
		}
		if name == "" {
			name = slotName(slot)
		}
		w := &r.windows[slot]
		if w.newerAt.IsZero() || now.Sub(w.newerAt) >= latencyWindow {
			w.older, w.newer, w.newerAt = w.newer, cur, now
		}
		for _, q := range latencyQuantiles {
			ch <- prometheus.MustNewConstMetric(totalTimeDesc, prometheus.GaugeValue, quantile(&cur, &w.older, q.q), name, q.label)
		}
		ch <- prometheus.MustNewConstMetric(totalTimeCountDesc, prometheus.CounterValue, float64(n), name)
	}
}
