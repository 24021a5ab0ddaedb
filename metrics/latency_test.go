package metrics

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/brook-mq/brook/internal/testutil"
)

// Every duration falls in a bucket whose upper edge is above it by at most
// a quarter (plus the 1 µs resolution).
func TestLatencyBucketBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		d := time.Duration(r.Int64N(int64(time.Hour)))
		us := float64(d.Microseconds())
		upper := bucketUpperMs(latencyBucket(d)) * 1000
		if upper <= us || upper > us*1.25+1 {
			t.Fatalf("%v (%v µs): bucket %d has upper edge %v µs", d, us, latencyBucket(d), upper)
		}
	}
	for i := 1; i < latencyBuckets; i++ {
		if bucketUpperMs(i) <= bucketUpperMs(i-1) {
			t.Fatalf("bucket edges not increasing at %d", i)
		}
	}
}

func TestQuantileAgainstSortedSample(t *testing.T) {
	var l latency
	var since latencySnapshot
	for i := 1; i <= 1000; i++ {
		l.observe(time.Duration(i) * time.Millisecond)
	}
	var now latencySnapshot
	l.snapshot(&now)
	for _, q := range latencyQuantiles {
		exact := q.q * 1000 // the sample is 1..1000 ms
		got := quantile(&now, &since, q.q)
		if got < exact || got > exact*1.25+0.001 {
			t.Errorf("quantile %s = %v ms, exact %v ms", q.label, got, exact)
		}
	}
	if quantile(&now, &now, 0.5) != 0 {
		t.Errorf("quantile of an empty window is not 0")
	}
}

func gather(t *testing.T, r *Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// The latency quantiles look back one to two windows: observations older
// than that leave them.
func TestRequestLatencyWindows(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1e9, 0))
	r := New(nil, clock.Now)
	slot := r.Requests.Received(0, 9, false)
	r.Requests.Completed(slot, 500*time.Millisecond)
	p99 := func() float64 {
		for _, m := range gather(t, r)["kafka_network_requestmetrics_totaltimems"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["request"] == "Produce" && labels["quantile"] == "0.99" {
				return m.GetGauge().GetValue()
			}
		}
		t.Fatal("no Produce 0.99 quantile")
		return 0
	}
	if got := p99(); got < 500 || got > 625 {
		t.Fatalf("p99 = %v, want about 500 ms", got)
	}
	clock.Advance(latencyWindow / 2)
	r.Requests.Completed(slot, time.Millisecond) // a fast request
	if got := p99(); got < 500 {
		t.Fatalf("p99 = %v half a window later, want the slow request still counted", got)
	}
	clock.Advance(latencyWindow / 2)
	r.Requests.Completed(slot, time.Millisecond)
	if got := p99(); got > 2 {
		t.Fatalf("p99 = %v a window after the scrape that saw it, want only the fast requests", got)
	}
	if got := gather(t, r)["kafka_network_requestmetrics_totaltimems_count"].GetMetric()[0].GetCounter().GetValue(); got != 3 {
		t.Fatalf("count = %v, want every request ever timed (3)", got)
	}
}

// Kafka's request label names: Fetch is FetchConsumer or FetchFollower,
// and Kafka's spelling wins over kmsg's.
func TestRequestNames(t *testing.T) {
	r := New(nil, time.Now)
	r.Requests.Received(1, 12, false)
	r.Requests.Received(1, 12, true)
	r.Requests.Received(22, 4, false)
	r.Requests.Received(4, 7, false)
	r.Requests.Received(200, 0, false) // not counted: no such key
	got := map[string]float64{}
	for _, m := range gather(t, r)["kafka_network_requestmetrics_requests_total"].GetMetric() {
		got[m.GetLabel()[0].GetValue()+"/"+m.GetLabel()[1].GetValue()] = m.GetCounter().GetValue()
	}
	want := map[string]float64{"FetchConsumer/12": 1, "FetchFollower/12": 1, "InitProducerId/4": 1, "LeaderAndIsr/7": 1}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// A BrokerTopicMetrics family holds the aggregate without labels and each
// topic with a topic label, as the JMX exporter writes them.
func TestTopicMetersAggregateAndPerTopic(t *testing.T) {
	r := New(nil, time.Now)
	r.Topics.Produced("a", 100, 2)
	r.Topics.Produced("b", 50, 1)
	r.Topics.Fetched("a", 30, false)
	r.Topics.Fetched("a", 1000, true)
	fam := gather(t, r)
	value := func(name, topic string) float64 {
		for _, m := range fam[name].GetMetric() {
			if (topic == "" && len(m.GetLabel()) == 0) || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == topic) {
				return m.GetCounter().GetValue()
			}
		}
		t.Fatalf("%s{topic=%q} missing", name, topic)
		return 0
	}
	for _, c := range []struct {
		name, topic string
		want        float64
	}{
		{"kafka_server_brokertopicmetrics_bytesin_total", "", 150},
		{"kafka_server_brokertopicmetrics_bytesin_total", "a", 100},
		{"kafka_server_brokertopicmetrics_messagesin_total", "b", 1},
		{"kafka_server_brokertopicmetrics_bytesout_total", "a", 30},
		{"kafka_server_brokertopicmetrics_replicationbytesout_total", "", 1000},
	} {
		if got := value(c.name, c.topic); got != c.want {
			t.Errorf("%s{topic=%q} = %v, want %v", c.name, c.topic, got, c.want)
		}
	}
	if n := len(fam["kafka_server_brokertopicmetrics_replicationbytesout_total"].GetMetric()); n != 1 {
		t.Errorf("replicationbytesout has %d series, want only the aggregate", n)
	}
	r.Topics.Remove("a")
	if n := len(gather(t, r)["kafka_server_brokertopicmetrics_bytesin_total"].GetMetric()); n != 2 {
		t.Errorf("bytesin has %d series after deleting a, want the aggregate and b", n)
	}
}

var _ prometheus.Collector = brokerCollector{}
