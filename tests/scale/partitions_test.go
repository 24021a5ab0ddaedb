package scale

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkPartitionsOneBroker: -scale.partitions idle partitions on one
// broker. It reports the time to create them until Metadata shows every
// one led (cold), the broker's RSS and descriptors per idle partition,
// the latency and size of a full Metadata answer, the broker CPU and
// latency of a fetch of every partition (sessionless, then incremental
// in a KIP-227 session, nothing to return), and the restart time with the
// logs present after SIGTERM and after kill -9 (to ApiVersions, and to
// every partition led).
func BenchmarkPartitionsOneBroker(b *testing.B) {
	n := *partitions
	p := testutil.StartBrook(b, brookBin, map[string]string{
		"num.partitions": "1",
		// Kafka's default is 1: one log at a time at start-up and
		// shutdown. Closing 10,000 (a producer snapshot each, fsynced)
		// one by one outlasts the 30 s a stop waits before SIGKILL.
		"num.recovery.threads.per.data.dir": strconv.Itoa(*recoveryThreads),
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.RequestTimeoutOverhead(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	fmt.Printf("scale: one broker, %d partitions, GOMAXPROCS %d\n", n, runtime.GOMAXPROCS(0))
	time.Sleep(2 * time.Second) // settle before the baseline (not a wait for a condition)
	rss0, fds0 := rss(b, p.PID()), openFiles(b, p.PID())

	start := time.Now()
	createTopics(b, cl, n, 1, nil)
	at, _ := waitFor(b, cl, 0, -1, 10*time.Minute, func(s state) bool { return s.led == n })
	report(b, "create-until-metadata-all-led", ms(at.Sub(start)), "ms")
	at = waitHosted(b, cl, []int32{0}, n, 10*time.Minute)
	report(b, "create-until-every-log-created", ms(at.Sub(start)), "ms")

	time.Sleep(5 * time.Second) // idle
	rss1, fds1 := rss(b, p.PID()), openFiles(b, p.PID())
	report(b, "rss-idle-total", mib(rss1), "MiB")
	report(b, "rss-per-idle-partition", float64(rss1-rss0)/float64(n)/1024, "KiB")
	report(b, "fds-per-idle-partition", float64(fds1-fds0)/float64(n), "fds")

	measureMetadata(b, cl)
	measureFetch(b, cl, p.Addr(), p.PID(), n)

	for _, how := range []string{"sigterm", "kill9"} {
		if how == "sigterm" {
			if err := p.Stop(); err != nil {
				b.Fatal(err)
			}
		} else {
			p.Kill9()
		}
		start := time.Now()
		if err := p.Start(); err != nil {
			b.Fatalf("restart: %v\n%s", err, p.LogTail(30))
		}
		up := time.Now()
		at, _ := waitFor(b, cl, 0, -1, 10*time.Minute, func(s state) bool { return s.led == n })
		report(b, "restart-after-"+how+"-to-apiversions", ms(up.Sub(start)), "ms")
		report(b, "restart-after-"+how+"-to-all-led", ms(at.Sub(start)), "ms")
		time.Sleep(3 * time.Second)
		report(b, "rss-after-restart-"+how, mib(rss(b, p.PID())), "MiB")
	}
}

// measureMetadata times 20 Metadata requests for every topic.
func measureMetadata(b *testing.B, cl *kgo.Client) {
	var lat []time.Duration
	var size int
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		resp, err := metadata(ctx, cl, 0)
		lat = append(lat, time.Since(start))
		cancel()
		if err != nil {
			b.Fatalf("Metadata: %v", err)
		}
		size = len(resp.AppendTo(nil))
	}
	report(b, "metadata-all-topics-p50", ms(percentile(lat, 50)), "ms")
	report(b, "metadata-all-topics-max", ms(percentile(lat, 100)), "ms")
	report(b, "metadata-all-topics-bytes", float64(size), "bytes")
}

// measureFetch fetches every partition at offset 0 (all empty, MaxWait 0),
// first sessionless, then in a session: one full fetch, incremental ones
// that name no partition, then incremental ones after a produce to one
// partition; it reports broker CPU and latency per fetch.
func measureFetch(b *testing.B, cl *kgo.Client, addr string, pid, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	resp, err := metadata(ctx, cl, 0)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	full := kmsg.NewPtrFetchRequest()
	full.ReplicaID, full.MaxWaitMillis, full.MinBytes, full.MaxBytes = -1, 0, 1, 50<<20
	for _, t := range resp.Topics {
		if survey(&kmsg.MetadataResponse{Topics: []kmsg.MetadataResponseTopic{t}}, -1).partitions == 0 {
			continue
		}
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = *t.Topic, t.TopicID
		for _, p := range t.Partitions {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p.Partition, 0, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
		}
		full.Topics = append(full.Topics, ft)
	}
	fetch := func(req *kmsg.FetchRequest) (*kmsg.FetchResponse, time.Duration, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		r, err := cl.Broker(0).Request(ctx, req)
		took := time.Since(start)
		if err != nil {
			b.Fatalf("Fetch: %v", err)
		}
		fr := r.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			b.Fatalf("Fetch: %v", err)
		}
		return fr, took, len(fr.AppendTo(nil))
	}
	rounds := *fetchRounds

	full.SessionID, full.SessionEpoch = 0, -1
	var lat []time.Duration
	var size int
	cpu0 := cpu(b, pid)
	for i := 0; i < rounds; i++ {
		_, took, sz := fetch(full)
		lat, size = append(lat, took), sz
	}
	report(b, "fetch-sessionless-broker-cpu", ms(cpu(b, pid)-cpu0)/float64(rounds), "ms/fetch")
	report(b, "fetch-sessionless-p50", ms(percentile(lat, 50)), "ms")
	report(b, "fetch-sessionless-bytes", float64(size), "bytes")

	full.SessionID, full.SessionEpoch = 0, 0
	first, took, sz := fetch(full)
	if first.SessionID == 0 {
		b.Fatalf("the full fetch got no session (%d partitions)", n)
	}
	report(b, "fetch-session-full-ms", ms(took), "ms")
	report(b, "fetch-session-full-bytes", float64(sz), "bytes")
	inc := kmsg.NewPtrFetchRequest()
	inc.ReplicaID, inc.MaxWaitMillis, inc.MinBytes, inc.MaxBytes = -1, 0, 1, 50<<20
	inc.SessionID = first.SessionID
	lat = lat[:0]
	cpu0 = cpu(b, pid)
	for i := 0; i < rounds; i++ {
		inc.SessionEpoch = int32(i + 1)
		_, took, sz := fetch(inc)
		lat, size = append(lat, took), sz
	}
	report(b, "fetch-incremental-broker-cpu", ms(cpu(b, pid)-cpu0)/float64(rounds), "ms/fetch")
	report(b, "fetch-incremental-p50", ms(percentile(lat, 50)), "ms")
	report(b, "fetch-incremental-bytes", float64(size), "bytes")

	// One partition of the n changed: each round produces one record to
	// a partition not produced to before, then fetches incrementally,
	// naming the partition of the round before at its new offset, as a
	// consumer does. The produce's own CPU is measured alone first and
	// reported, to be subtracted.
	topic := full.Topics[0]
	rounds = min(rounds, len(topic.Partitions)/2)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer pcl.Close()
	produce := func(partition int32) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r := &kgo.Record{Topic: topic.Topic, Partition: partition, Value: []byte("x")}
		if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			b.Fatalf("produce: %v", err)
		}
	}
	cpu0 = cpu(b, pid)
	for i := 0; i < rounds; i++ {
		produce(topic.Partitions[rounds+i].Partition)
	}
	produceCPU := ms(cpu(b, pid)-cpu0) / float64(rounds)
	report(b, "produce-one-record-broker-cpu", produceCPU, "ms/produce")
	// The session moves those partitions past their record, as a
	// consumer would, so that they are quiet again.
	epoch := inc.SessionEpoch + 1
	inc.SessionEpoch = epoch
	moved := kmsg.NewFetchRequestTopic()
	moved.Topic, moved.TopicID = topic.Topic, topic.TopicID
	for _, fp := range topic.Partitions[rounds : 2*rounds] {
		fp.FetchOffset = 1
		moved.Partitions = append(moved.Partitions, fp)
	}
	inc.Topics = []kmsg.FetchRequestTopic{moved}
	fetch(inc)
	lat = lat[:0]
	cpu0 = cpu(b, pid)
	for i := 0; i < rounds; i++ {
		p := topic.Partitions[i].Partition
		produce(p)
		epoch++
		inc.SessionEpoch, inc.Topics = epoch, nil
		if i > 0 {
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = topic.Topic, topic.TopicID
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = topic.Partitions[i-1].Partition, 1, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
			inc.Topics = append(inc.Topics, ft)
		}
		r, took, _ := fetch(inc)
		var got []int32
		for _, t := range r.Topics {
			for _, rp := range t.Partitions {
				got = append(got, rp.Partition)
			}
		}
		if len(got) != 1 || got[0] != p {
			b.Fatalf("incremental fetch after a produce to partition %d: partitions %v, want that partition alone", p, got)
		}
		lat = append(lat, took)
	}
	report(b, "fetch-incremental-one-changed-broker-cpu", ms(cpu(b, pid)-cpu0)/float64(rounds)-produceCPU, "ms/fetch")
	report(b, "fetch-incremental-one-changed-p50", ms(percentile(lat, 50)), "ms")
}
