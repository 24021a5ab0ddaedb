package scale

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// zkSessionTimeout is the brokers' zookeeper.session.timeout.ms: a killed
// broker is noticed only when its session expires, so it is part of the
// failover time, reported on its own (Kafka's default is 18 s).
var zkSessionTimeout = flag.Duration("scale.zk-session-timeout", 3*time.Second, "the failover benchmark's zookeeper.session.timeout.ms")

// BenchmarkClusterFailover: ZooKeeper and 3 brokers (Brook, or Kafka 3.9
// with -scale.cluster-server kafka39), -scale.cluster-partitions
// partitions at replication factor -scale.cluster-rf. It kills the
// controller with SIGKILL and reports the time until a surviving broker's
// Metadata shows every partition led by a live broker, then starts the
// killed broker again and reports the time until every ISR is full.
func BenchmarkClusterFailover(b *testing.B) {
	n, rf, server := *clusterPartitions, *clusterRF, *clusterServer
	// ZooKeeper with the heap Kafka's own script gives it: at 50,000
	// partitions the tests' 256 MiB heap collected in full for 0.2-0.5 s
	// at a time, and those pauses stalled the rejoin's state writes.
	zk := testutil.StartZooKeeperJVM(b, testutil.ScaleZooKeeperJVM())
	props := func(id int) map[string]string {
		return map[string]string{
			"broker.id":                        strconv.Itoa(id),
			"zookeeper.connect":                zk.Connect() + "/scale",
			"zookeeper.session.timeout.ms":     strconv.Itoa(int(zkSessionTimeout.Milliseconds())),
			"offsets.topic.replication.factor": "3",
			"default.replication.factor":       "3",
			// Small segments and indexes: tens of thousands of partitions
			// each preallocate segment.index.bytes twice (Kafka mmaps them).
			"log.segment.bytes":                    strconv.Itoa(16 << 20),
			"log.index.size.max.bytes":             strconv.Itoa(64 << 10),
			"controlled.shutdown.retry.backoff.ms": "500",
			"group.initial.rebalance.delay.ms":     "0",
			"num.recovery.threads.per.data.dir":    strconv.Itoa(*recoveryThreads),
		}
	}
	brokers := map[int32]*testutil.Process{}
	var prof *profiler
	if server == "brook" {
		prof = newProfiler(b, []int32{1, 2, 3})
	}
	for id := 1; id <= 3; id++ {
		switch server {
		case "brook":
			pr := props(id)
			prof.props(int32(id), pr)
			brokers[int32(id)] = testutil.StartBrook(b, brookBin, pr)
		case "kafka39":
			port := testutil.FreePort(b)
			pr := props(id)
			pr["log.dirs"] = filepath.Join(b.TempDir(), "data")
			p := testutil.NewKafka39(b, pr, port)
			if err := p.Start(); err != nil {
				b.Fatalf("start kafka %d: %v\n%s", id, err, p.LogTail(30))
			}
			brokers[int32(id)] = p
		default:
			b.Fatalf("-scale.cluster-server %q: want brook or kafka39", server)
		}
	}
	var seeds []string
	for _, p := range brokers {
		seeds = append(seeds, p.Addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestTimeoutOverhead(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	fmt.Printf("scale: %s, 3 brokers, %d partitions, RF %d, session timeout %v\n", server, n, rf, *zkSessionTimeout)

	start := time.Now()
	createTopics(b, cl, n, rf, nil)
	at, _ := waitFor(b, cl, 1, -1, 30*time.Minute, func(s state) bool { return s.partitions == n && s.led == n && s.fullISR == n })
	report(b, server+"-create-until-metadata-all-led-full-isr", ms(at.Sub(start)), "ms")
	at = waitHosted(b, cl, []int32{1, 2, 3}, n*rf, 30*time.Minute)
	report(b, server+"-create-until-every-replica-hosted", ms(at.Sub(start)), "ms")
	at, _ = waitFor(b, cl, 1, -1, 30*time.Minute, func(s state) bool { return s.partitions == n && s.led == n && s.fullISR == n })
	report(b, server+"-create-until-all-in-sync", ms(at.Sub(start)), "ms")
	for id, p := range brokers {
		fmt.Printf("scale: broker %d: RSS %.1f MiB, %d fds\n", id, mib(rss(b, p.PID())), openFiles(b, p.PID()))
	}
	time.Sleep(5 * time.Second) // idle, as a cluster is before a crash

	_, st := waitFor(b, cl, 1, -1, time.Minute, func(s state) bool { return s.controller > 0 })
	ctrl := st.controller
	survivor := int32(1)
	if ctrl == 1 {
		survivor = 2
	}
	brokers[ctrl].Kill9()
	killed := time.Now()
	var survivors []int32
	for id := range brokers {
		if id != ctrl {
			survivors = append(survivors, id)
		}
	}
	prof.start("failover", survivors...)
	var newCtrl time.Time
	at, st = waitFor(b, cl, survivor, ctrl, 10*time.Minute, func(s state) bool {
		if newCtrl.IsZero() && s.controller > 0 && s.controller != ctrl {
			newCtrl = time.Now()
		}
		return !newCtrl.IsZero() && s.led == n
	})
	fmt.Printf("scale: when every partition was led again: %v\n", st)
	report(b, server+"-kill9-controller-to-new-controller", ms(newCtrl.Sub(killed)), "ms")
	report(b, server+"-kill9-controller-to-all-led", ms(at.Sub(killed)), "ms")
	report(b, server+"-kill9-controller-to-all-led-after-session", ms(at.Sub(killed)-*zkSessionTimeout), "ms")

	prof.finishPhase()
	restart := time.Now()
	prof.start("rejoin", append(survivors, ctrl)...)
	if err := brokers[ctrl].Start(); err != nil {
		b.Fatalf("restart broker %d: %v\n%s", ctrl, err, brokers[ctrl].LogTail(30))
	}
	up := time.Now()
	at, _ = waitFor(b, cl, survivor, -1, 30*time.Minute, func(s state) bool { return s.fullISR == n && s.led == n })
	report(b, server+"-restart-killed-to-apiversions", ms(up.Sub(restart)), "ms")
	report(b, server+"-restart-killed-to-all-isr-full", ms(at.Sub(restart)), "ms")
	prof.finish(brokers)
}
