// Package scale measures Brook at scale, as processes: 10,000 partitions on
// one broker (start-up, memory per idle partition, Metadata and Fetch
// cost), a 3-broker ZooKeeper cluster with tens of thousands of partitions
// (controller failover after kill -9, rejoin of a killed broker), and
// 10,000 client connections (memory, produce latency of an active client).
//
// Everything here is a benchmark, run once (-benchtime 1x) by
// make bench-scale, never by make test: the figures go to
// docs/benchmarks.md, and nothing asserts on time. Sizes are flags, so a
// loaded machine can run a smaller quick round:
//
//	make bench-scale SCALE_ARGS="-scale.partitions 2000"
package scale

import (
	"flag"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// brookBin is the broker binary: $BROOK_BIN, or a build made once here.
var brookBin string

var (
	partitions        = flag.Int("scale.partitions", 10000, "partitions of the one-broker benchmark")
	clusterPartitions = flag.Int("scale.cluster-partitions", 50000, "partitions of the 3-broker failover benchmark")
	clusterRF         = flag.Int("scale.cluster-rf", 3, "replication factor of the failover benchmark's topic")
	clusterServer     = flag.String("scale.cluster-server", "brook", "the failover benchmark's brokers: brook or kafka39 (Apache Kafka 3.9, ZooKeeper mode)")
	connections       = flag.Int("scale.connections", 10000, "idle client connections of the connections benchmark")
	fetchRounds       = flag.Int("scale.fetch-rounds", 50, "fetches per kind (sessionless, incremental) in the one-broker benchmark")
	recoveryThreads   = flag.Int("scale.recovery-threads", 8, "the brokers' num.recovery.threads.per.data.dir (Kafka's default is 1)")
	produceRecords    = flag.Int("scale.produce-records", 2000, "records the active client produces, one at a time, per phase of the connections benchmark")
)

func TestMain(m *testing.M) {
	flag.Parse()
	testutil.MainWithBrook(m, &brookBin)
}
