package broker

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// producedBytes adds up what the producer wrote, as Kafka counts
// BytesInPerSec: the batch as sent, its 61-byte header included.
type producedBytes struct{ n atomic.Int64 }

func (p *producedBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	p.n.Add(int64(m.CompressedBytes) + 61)
}

// TestMetricsAfterProduceFetchCommit scrapes a real broker's metrics
// listener and checks values against what the test did: bytes and
// messages in equal what was produced, bytes out what was fetched, lag
// what is left unconsumed, and the partition, topic and group counts.
func TestMetricsAfterProduceFetchCommit(t *testing.T) {
	tb := startBroker(t, map[string]string{"brook.metrics.listener": "127.0.0.1:0"})
	addr := tb.b.MetricsAddr().String()
	tb.createTopic("m", 3, nil)
	ctx := testContext(t)

	var produced producedBytes
	cl := tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(&produced))
	perPartition := []int{10, 10, 5}
	var recs []*kgo.Record
	for p, n := range perPartition {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: "m", Partition: int32(p), Value: []byte{byte(i), 'v'}})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// One consumer fetch of everything, v12, read from the response.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes, fetch.MinBytes, fetch.SessionEpoch = -1, 10<<20, 1, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "m"
	for p := range perPartition {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = int32(p), 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	fetched := 0
	for _, rt := range tb.roundTrip(fetch).(*kmsg.FetchResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("fetch partition %d: error %d", rp.Partition, rp.ErrorCode)
			}
			fetched += len(rp.RecordBatches)
		}
	}

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "m", Partition: 0, At: 10, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "m", Partition: 1, At: 4, LeaderEpoch: -1})
	if resp, err := tb.admin().CommitOffsets(ctx, "g", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}

	// The request timer stops once the response is written, which may be
	// just after the client read it.
	var s testutil.Scrape
	testutil.Eventually(t, 30*time.Second, func() error {
		s = testutil.MustScrape(t, addr)
		if _, ok := s.Value("kafka_network_requestmetrics_totaltimems_count", "request", "FetchConsumer"); !ok {
			return errors.New("FetchConsumer not timed yet")
		}
		return nil
	})
	expect := func(want float64, name string, labels ...string) {
		t.Helper()
		got, ok := s.Value(name, labels...)
		if !ok {
			t.Errorf("%s%v: no such series", name, labels)
		} else if got != want {
			t.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
	}
	logSize := 0.0
	for p, n := range perPartition {
		part := string(rune('0' + p))
		expect(float64(n), "kafka_log_log_logendoffset", "topic", "m", "partition", part)
		expect(0, "kafka_log_log_logstartoffset", "topic", "m", "partition", part)
		v, _ := s.Value("kafka_log_log_size", "topic", "m", "partition", part)
		logSize += v
	}
	if logSize != float64(produced.n.Load()) {
		t.Errorf("log size over partitions %v, want the %d bytes produced", logSize, produced.n.Load())
	}
	expect(float64(produced.n.Load()), "kafka_server_brokertopicmetrics_bytesin_total", "topic", "m")
	expect(float64(produced.n.Load()), "kafka_server_brokertopicmetrics_bytesin_total")
	expect(25, "kafka_server_brokertopicmetrics_messagesin_total", "topic", "m")
	expect(25, "kafka_server_brokertopicmetrics_messagesin_total")
	expect(float64(fetched), "kafka_server_brokertopicmetrics_bytesout_total", "topic", "m")
	expect(float64(fetched), "kafka_server_brokertopicmetrics_bytesout_total")
	expect(3, "kafka_server_brokertopicmetrics_totalfetchrequests_total", "topic", "m")
	expect(0, "kafka_server_brokertopicmetrics_failedproducerequests_total", "topic", "m")

	// Three partitions of m and the four of __consumer_offsets.
	expect(7, "kafka_server_replicamanager_partitioncount")
	expect(7, "kafka_server_replicamanager_leadercount")
	expect(0, "kafka_server_replicamanager_underreplicatedpartitions")
	expect(1, "kafka_controller_kafkacontroller_activecontrollercount")
	expect(0, "kafka_controller_kafkacontroller_offlinepartitionscount")
	expect(2, "kafka_controller_kafkacontroller_globaltopiccount")
	expect(7, "kafka_controller_kafkacontroller_globalpartitioncount")

	expect(1, "kafka_coordinator_group_groupmetadatamanager_numgroups")
	expect(1, "kafka_coordinator_group_groupmetadatamanager_numgroupsempty")
	expect(2, "kafka_coordinator_group_groupmetadatamanager_numoffsets")
	expect(10, "kafka_consumergroup_current_offset", "consumergroup", "g", "topic", "m", "partition", "0")
	expect(0, "kafka_consumergroup_lag", "consumergroup", "g", "topic", "m", "partition", "0")
	expect(6, "kafka_consumergroup_lag", "consumergroup", "g", "topic", "m", "partition", "1")
	if _, ok := s.Value("kafka_consumergroup_lag", "consumergroup", "g", "topic", "m", "partition", "2"); ok {
		t.Errorf("lag reported for a partition the group never committed")
	}

	expect(1, "kafka_network_requestmetrics_requests_total", "request", "FetchConsumer", "version", "12")
	expect(1, "kafka_network_requestmetrics_totaltimems_count", "request", "FetchConsumer")
	if q, ok := s.Value("kafka_network_requestmetrics_totaltimems", "request", "FetchConsumer", "quantile", "0.99"); !ok || q <= 0 {
		t.Errorf("FetchConsumer 99th percentile = %v (present %v), want a positive time", q, ok)
	}
	if s.Count("kafka_network_requestmetrics_requests_total") < 4 {
		t.Errorf("requests_total has %d series; Produce, Metadata, ApiVersions and FetchConsumer at least", s.Count("kafka_network_requestmetrics_requests_total"))
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes"} {
		if s.Count(name) == 0 {
			t.Errorf("no %s: the Go runtime and process collectors are missing", name)
		}
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("pprof answered %s without brook.metrics.pprof.enable", resp.Status)
	}
}

// TestMetricsListenerOptIn: no listener unless configured; pprof only
// when enabled; the listener closes with the broker.
func TestMetricsListenerOptIn(t *testing.T) {
	if tb := startBroker(t, nil); tb.b.MetricsAddr() != nil {
		t.Fatalf("metrics listener %v without brook.metrics.listener", tb.b.MetricsAddr())
	}
	tb := startBroker(t, map[string]string{"brook.metrics.listener": "127.0.0.1:0", "brook.metrics.pprof.enable": "true"})
	addr := tb.b.MetricsAddr().String()
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("pprof goroutine profile: %s", resp.Status)
	}
	tb.stop()
	if _, err := testutil.ScrapeMetrics(addr); err == nil {
		t.Errorf("metrics listener %s still answers after the broker stopped", addr)
	}
}
