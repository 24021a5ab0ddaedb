package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// topicCounters are one topic's BrokerTopicMetrics meters (their Count), or
// the aggregate over all topics.
type topicCounters struct {
	bytesIn, messagesIn, bytesOut atomic.Uint64
	totalProduce, failedProduce   atomic.Uint64
	totalFetch, failedFetch       atomic.Uint64
	replicationBytesOut           atomic.Uint64 // aggregate only, as in Kafka
}

// Topics counts Kafka's BrokerTopicMetrics per topic and over all topics.
// A topic's counters are found through a read-locked map and created on
// first use; Remove drops them when the topic is deleted, as Kafka removes
// a deleted topic's MBeans.
type Topics struct {
	all    topicCounters
	mu     sync.RWMutex
	topics map[string]*topicCounters
}

func newTopics() *Topics { return &Topics{topics: map[string]*topicCounters{}} }

func (t *Topics) get(topic string) *topicCounters {
	t.mu.RLock()
	c := t.topics[topic]
	t.mu.RUnlock()
	if c != nil {
		return c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c = t.topics[topic]; c == nil {
		c = &topicCounters{}
		t.topics[topic] = c
	}
	return c
}

// Produced counts one partition's produce: the request's record bytes and
// the records appended (0 for a duplicate), as Kafka's ReplicaManager marks
// BytesInPerSec and MessagesInPerSec after a successful append.
func (t *Topics) Produced(topic string, bytes, messages int) {
	if t == nil {
		return
	}
	c := t.get(topic)
	for _, c := range [2]*topicCounters{c, &t.all} {
		c.totalProduce.Add(1)
		c.bytesIn.Add(uint64(bytes))
		c.messagesIn.Add(uint64(messages))
	}
}

// ProduceFailed counts one partition's failed produce.
func (t *Topics) ProduceFailed(topic string) {
	if t == nil {
		return
	}
	for _, c := range [2]*topicCounters{t.get(topic), &t.all} {
		c.totalProduce.Add(1)
		c.failedProduce.Add(1)
	}
}

// Fetched counts one partition's fetched bytes. A follower's count as
// ReplicationBytesOutPerSec only, as Kafka keeps them out of BytesOutPerSec.
func (t *Topics) Fetched(topic string, bytes int, fromFollower bool) {
	if t == nil {
		return
	}
	if fromFollower {
		t.all.replicationBytesOut.Add(uint64(bytes))
		return
	}
	for _, c := range [2]*topicCounters{t.get(topic), &t.all} {
		c.totalFetch.Add(1)
		c.bytesOut.Add(uint64(bytes))
	}
}

// FetchFailed counts one partition's failed consumer fetch.
func (t *Topics) FetchFailed(topic string) {
	if t == nil {
		return
	}
	for _, c := range [2]*topicCounters{t.get(topic), &t.all} {
		c.totalFetch.Add(1)
		c.failedFetch.Add(1)
	}
}

// Remove drops a deleted topic's counters.
func (t *Topics) Remove(topic string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.topics, topic)
	t.mu.Unlock()
}

// topicMeter is one BrokerTopicMetrics meter: its names with and without
// the topic label, and how to read it.
type topicMeter struct {
	all, perTopic *prometheus.Desc
	read          func(*topicCounters) uint64
}

func newTopicMeter(mbeanName, metric string, read func(*topicCounters) uint64, aggregateOnly bool) topicMeter {
	name := "kafka_server_brokertopicmetrics_" + metric + "_total"
	// Both series of a family share one help text: the aggregate and the
	// per-topic MBean differ only by the topic key.
	help := "Count of kafka.server:type=BrokerTopicMetrics,name=" + mbeanName + "; with a topic label, of that topic's MBean."
	m := topicMeter{all: prometheus.NewDesc(name, help, nil, nil), read: read}
	if !aggregateOnly {
		m.perTopic = prometheus.NewDesc(name, help, []string{"topic"}, nil)
	}
	return m
}

var topicMeters = []topicMeter{
	newTopicMeter("BytesInPerSec", "bytesin", func(c *topicCounters) uint64 { return c.bytesIn.Load() }, false),
	newTopicMeter("MessagesInPerSec", "messagesin", func(c *topicCounters) uint64 { return c.messagesIn.Load() }, false),
	newTopicMeter("BytesOutPerSec", "bytesout", func(c *topicCounters) uint64 { return c.bytesOut.Load() }, false),
	newTopicMeter("TotalProduceRequestsPerSec", "totalproducerequests", func(c *topicCounters) uint64 { return c.totalProduce.Load() }, false),
	newTopicMeter("FailedProduceRequestsPerSec", "failedproducerequests", func(c *topicCounters) uint64 { return c.failedProduce.Load() }, false),
	newTopicMeter("TotalFetchRequestsPerSec", "totalfetchrequests", func(c *topicCounters) uint64 { return c.totalFetch.Load() }, false),
	newTopicMeter("FailedFetchRequestsPerSec", "failedfetchrequests", func(c *topicCounters) uint64 { return c.failedFetch.Load() }, false),
	newTopicMeter("ReplicationBytesOutPerSec", "replicationbytesout", func(c *topicCounters) uint64 { return c.replicationBytesOut.Load() }, true),
}

func (t *Topics) collect(ch chan<- prometheus.Metric) {
	for _, m := range topicMeters {
		ch <- prometheus.MustNewConstMetric(m.all, prometheus.CounterValue, float64(m.read(&t.all)))
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for topic, c := range t.topics {
		for _, m := range topicMeters {
			if m.perTopic != nil {
				ch <- prometheus.MustNewConstMetric(m.perTopic, prometheus.CounterValue, float64(m.read(c)), topic)
			}
		}
	}
}
