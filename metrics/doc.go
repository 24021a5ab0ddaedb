// Package metrics exports a broker's metrics in the Prometheus text format
// under the names and labels that the Prometheus JMX exporter gives Apache
// Kafka's MBeans with its standard Kafka rules (example_configs/kafka-2_0_0.yml:
// lowercased names, MBean key properties kept as labels), so that Kafka's
// Grafana dashboards and alerts work against Brook with only the job name
// changed. docs/metrics.md lists every metric with its Kafka MBean.
//
// The JMX exporter turns kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t
// into kafka_server_brokertopicmetrics_bytesin_total{topic="t"} (a meter's
// Count, "PerSec" dropped, "_total" added), a gauge's Value into
// kafka_<domain>_<type>_<name>, and a histogram into kafka_<...>_<name>{quantile="0.99"}
// plus kafka_<...>_<name>_count. The aggregate of a per-topic meter is the
// same name without the topic label, as Kafka registers a second MBean
// without the topic key.
//
// Most values are read from the broker's state when Prometheus scrapes
// (Source); only what has no state to read (bytes and messages in and out,
// requests and their latency, ISR changes) is counted as it happens, with
// atomic counters in fixed arrays or per-topic structs found through a
// read-locked map, so that counting costs no allocation on the request path.
package metrics
