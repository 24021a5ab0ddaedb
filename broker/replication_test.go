package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
)

// replCluster is three in-process brokers over one real ZooKeeper.
type replCluster struct {
	t       testing.TB
	brokers map[int32]*testBroker
}

func startReplCluster(t testing.TB) *replCluster {
	return startReplClusterWith(t, nil)
}

// startReplClusterWith is startReplCluster with setup run on every broker
// before each Run, for tests that install hooks or replace handlers.
func startReplClusterWith(t testing.TB, setup func(*Broker)) *replCluster {
	return startReplClusterConfigs(t, nil, setup)
}

// startReplClusterConfigs is startReplClusterWith with extra(id) added to
// broker id's configs (nil: none), for racks and other per-broker settings.
func startReplClusterConfigs(t testing.TB, extra func(id int32) map[string]string, setup func(*Broker)) *replCluster {
	zk := testutil.StartZooKeeper(t)
	c := &replCluster{t: t, brokers: map[int32]*testBroker{}}
	for id := int32(1); id <= 3; id++ {
		props := map[string]string{
			"zookeeper.connect":                    zk.Connect() + "/replication",
			"broker.id":                            strconv.Itoa(int(id)),
			"offsets.topic.replication.factor":     "3",
			"replica.lag.time.max.ms":              "3000",
			"replica.fetch.wait.max.ms":            "200",
			"replica.fetch.backoff.ms":             "100",
			"auto.leader.rebalance.enable":         "false",
			"controlled.shutdown.retry.backoff.ms": "200",
		}
		if extra != nil {
			maps.Copy(props, extra(id))
		}
		c.brokers[id] = startBrokerWith(t, props, setup)
	}
	return c
}

// seeds lists the running brokers' addresses.
func (c *replCluster) seeds() []string {
	var out []string
	for _, tb := range c.brokers {
		if tb.cancel != nil {
			out = append(out, tb.addr)
		}
	}
	return out
}

func (c *replCluster) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// partitionMeta returns the leader and ISR of topic's partition 0 as
// Metadata shows them.
func (c *replCluster) partitionMeta(ctx context.Context, adm *kadm.Client, topic string) (int32, []int32, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return -1, nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return -1, nil, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	p, ok := td.Partitions[0]
	if !ok || p.Err != nil {
		return -1, nil, fmt.Errorf("partition 0: %v", p.Err)
	}
	isr := slices.Clone(p.ISR)
	slices.Sort(isr)
	return p.Leader, isr, nil
}

// createReplicated creates topic with one partition on all three brokers,
// once all three are registered, and waits until its ISR is whole; it
// returns the leader.
func (c *replCluster) createReplicated(ctx context.Context, adm *kadm.Client, topic string, configs map[string]*string) int32 {
	c.t.Helper()
	testutil.Eventually(c.t, 30*time.Second, func() error {
		bs, err := adm.ListBrokers(ctx)
		if err != nil || len(bs) != 3 {
			return fmt.Errorf("brokers %v: %v", bs, err)
		}
		return nil
	})
	if resp, err := adm.CreateTopic(ctx, 1, 3, configs, topic); err != nil || resp.Err != nil {
		c.t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	leader := c.waitISR(ctx, adm, topic, []int32{1, 2, 3})
	// The metadata names the leader before every LeaderAndIsr is applied
	// (UpdateMetadata may come first): tests read the partitions directly.
	testutil.Eventually(c.t, 30*time.Second, func() error {
		for id, tb := range c.brokers {
			p := tb.b.replicas.Get(topic, 0)
			if p == nil || (id == leader && !p.IsLeader()) {
				return fmt.Errorf("broker %d does not host %s-0 as the metadata says yet", id, topic)
			}
		}
		return nil
	})
	return leader
}

// waitISR waits until topic's partition 0 has exactly the ISR want (sorted)
// and returns its leader.
func (c *replCluster) waitISR(ctx context.Context, adm *kadm.Client, topic string, want []int32) int32 {
	c.t.Helper()
	var leader int32
	testutil.Eventually(c.t, 30*time.Second, func() error {
		l, isr, err := c.partitionMeta(ctx, adm, topic)
		if err != nil {
			return err
		}
		if !slices.Equal(isr, want) {
			return fmt.Errorf("ISR %v, want %v", isr, want)
		}
		leader = l
		return nil
	})
	return leader
}

// logBytes reads a partition's whole local log.
func logBytes(l *log.Log) ([]byte, error) {
	var out []byte
	leo := l.LogEndOffset()
	for off := l.LogStartOffset(); off < leo; {
		s, err := l.Read(off, 1<<30, leo, true)
		if err != nil {
			return nil, err
		}
		if s.Size == 0 {
			return nil, fmt.Errorf("empty read at %d below LEO %d", off, leo)
		}
		chunk, err := s.ReadInto(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, chunk...)
		for len(chunk) > 0 {
			h, err := batch.ParseHeader(chunk)
			if err != nil {
				return nil, err
			}
			off = h.LastOffset() + 1
			chunk = chunk[h.Size():]
		}
	}
	return out, nil
}

// replicasIdentical checks that the running replicas of topic-0 have the
// same log end offset and bytes.
func (c *replCluster) replicasIdentical(topic string, ids ...int32) error {
	var want []byte
	var wantLEO int64
	for i, id := range ids {
		p := c.brokers[id].b.replicas.Get(topic, 0)
		if p == nil {
			return fmt.Errorf("broker %d does not host %s-0", id, topic)
		}
		got, err := logBytes(p.Log())
		if err != nil {
			return fmt.Errorf("broker %d: %w", id, err)
		}
		leo := p.Log().LogEndOffset()
		if i == 0 {
			want, wantLEO = got, leo
			continue
		}
		if leo != wantLEO || !bytes.Equal(got, want) {
			return fmt.Errorf("broker %d: LEO %d (%d bytes), broker %d: LEO %d (%d bytes)", id, leo, len(got), ids[0], wantLEO, len(want))
		}
	}
	return nil
}

// produceAcked writes n records with acks=all through an idempotent producer and
// returns their values; every one must be acknowledged.
func produceAcked(ctx context.Context, t *testing.T, cl *kgo.Client, topic, prefix string, n int) []string {
	t.Helper()
	var recs []*kgo.Record
	var vals []string
	for i := range n {
		v := fmt.Sprintf("%s-%d", prefix, i)
		vals = append(vals, v)
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", prefix, err)
	}
	return vals
}

// consumeReplicated reads topic-0 from the start until it has want records.
func consumeReplicated(ctx context.Context, t *testing.T, c *replCluster, topic string, want int) []string {
	t.Helper()
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for len(got) < want {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(got), want)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestReplicationCluster runs the replication story on three brokers:
// acks=all writes reach every replica byte for byte; a stopped follower
// leaves the ISR while produce goes on, and rejoins after catching up; the
// leader stops, a new leader from the ISR keeps every acknowledged record,
// and the old leader's divergent tail is cut when it returns.
func TestReplicationCluster(t *testing.T) {
	c := startReplCluster(t)
	ctx := testContext(t)
	const topic = "replicated"
	adm := kadm.NewClient(c.client())
	minISR := "2"
	all := []int32{1, 2, 3}
	waitISR := func(want []int32) int32 { return c.waitISR(ctx, adm, topic, want) }
	leader := c.createReplicated(ctx, adm, topic, map[string]*string{"min.insync.replicas": &minISR})

	producer := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20))
	acked := produceAcked(ctx, t, producer, topic, "first", 300)
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical(topic, all...) })
	if got := consumeReplicated(ctx, t, c, topic, len(acked)); !slices.Equal(got, acked) {
		t.Fatalf("consumed %d records, not the %d produced in order", len(got), len(acked))
	}

	// A consumer group's commit goes through __consumer_offsets, itself
	// replicated three ways with acks=all.
	group := c.client(kgo.ConsumerGroup("repl-group"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	for n := 0; n < len(acked); {
		fs := group.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group consumed %d of %d: %v", n, len(acked), err)
		}
		n += fs.NumRecords()
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group commit: %v", err)
	}
	offsets, err := adm.FetchOffsets(ctx, "repl-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offsets.Lookup(topic, 0); !ok || o.At != int64(len(acked)) {
		t.Fatalf("committed offset %+v %v, want %d", o, ok, len(acked))
	}
	group.Close()

	// A follower stops: the ISR shrinks, and with min.insync.replicas=2
	// acks=all produce goes on.
	follower := all[0]
	if follower == leader {
		follower = all[1]
	}
	c.brokers[follower].stop()
	others := slices.DeleteFunc(slices.Clone(all), func(id int32) bool { return id == follower })
	waitISR(others)
	acked = append(acked, produceAcked(ctx, t, producer, topic, "second", 200)...)

	// It returns, catches up and rejoins the ISR.
	c.brokers[follower].start()
	waitISR(all)
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical(topic, all...) })

	// The leader stops; a new leader comes from the ISR and keeps every
	// acknowledged record.
	oldLeader := c.brokers[leader]
	oldEpoch := oldLeader.b.replicas.Get(topic, 0).State().LeaderEpoch
	oldLeader.stop()
	rest := slices.DeleteFunc(slices.Clone(all), func(id int32) bool { return id == leader })
	newLeader := waitISR(rest)
	if newLeader == leader || !slices.Contains(rest, newLeader) {
		t.Fatalf("new leader %d, old %d", newLeader, leader)
	}
	acked = append(acked, produceAcked(ctx, t, producer, topic, "third", 100)...)
	if got := consumeReplicated(ctx, t, c, topic, len(acked)); !slices.Equal(got, acked) {
		t.Fatalf("after failover consumed %d records, want the %d acknowledged in order", len(got), len(acked))
	}

	// Give the stopped leader a tail the others never had, as if it had
	// appended records in its old epoch that were never replicated.
	appendDivergentTail(t, oldLeader, topic, oldEpoch)
	oldLeader.start()
	waitISR(all)
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical(topic, all...) })
	b, err := logBytes(oldLeader.b.replicas.Get(topic, 0).Log())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("divergent")) {
		t.Fatal("the old leader kept its divergent tail")
	}
}

// appendDivergentTail opens a stopped broker's log directly and appends a
// batch stamped with leader epoch epoch.
func appendDivergentTail(t *testing.T, tb *testBroker, topic string, epoch int32) {
	t.Helper()
	m, err := log.OpenManager(log.ManagerConfig{
		Dirs: []string{tb.dir}, BrokerID: tb.b.cfg.BrokerID, ClusterID: tb.b.clusterID, Now: time.Now, Logger: testLogger(),
	}, func(log.TopicPartition) log.Config { return log.DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	l := m.Get(log.TopicPartition{Topic: topic, Partition: 0})
	if l == nil {
		t.Fatal("no log for the partition on the old leader")
	}
	var recs []batch.Record
	for i := range 5 {
		recs = append(recs, batch.Record{OffsetDelta: int32(i), Value: []byte("divergent-" + strconv.Itoa(i))})
	}
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: epoch, BaseTimestamp: time.Now().UnixMilli()}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b, epoch); err != nil {
		t.Fatal(err)
	}
}

var _ = errors.New

// benchCluster starts three brokers with a three-way replicated topic
// (min.insync.replicas=2) and an acks=all producer to it, warmed up.
func benchCluster(b *testing.B, topic string) (*replCluster, *kadm.Client, *kgo.Client) {
	c := startReplCluster(b)
	ctx := testContext(b)
	adm := kadm.NewClient(c.client())
	testutil.Eventually(b, 30*time.Second, func() error {
		bs, err := adm.ListBrokers(ctx)
		if err != nil || len(bs) != 3 {
			return fmt.Errorf("brokers %v: %v", bs, err)
		}
		return nil
	})
	minISR := "2"
	if resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		b.Fatalf("create topic: %v %v", err, resp.Err)
	}
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	// Warm up: metadata, producer id, ISR complete.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: benchValue()}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	return c, adm, cl
}

// benchValue is 1 KiB of random bytes: franz-go compresses batches by
// default, and a repeated byte would shrink to almost nothing.
func benchValue() []byte {
	value := make([]byte, 1024)
	rand.NewChaCha8([32]byte{1}).Read(value)
	return value
}

// BenchmarkReplicatedProduceSync measures one acks=all record at a time:
// ns/op is the produce latency through replication.
func BenchmarkReplicatedProduceSync(b *testing.B) {
	_, _, cl := benchCluster(b, "bench-sync")
	ctx := testContext(b)
	value := benchValue()
	b.ResetTimer()
	for range b.N {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplicatedProduce measures acks=all throughput of 1 KiB records
// produced asynchronously.
func BenchmarkReplicatedProduce(b *testing.B) {
	const topic = "bench"
	c, adm, cl := benchCluster(b, topic)
	ctx := testContext(b)
	value := benchValue()
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	errs := make(chan error, 1)
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	// Every record is committed: the HW (ListOffsets latest) covers them.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != int64(b.N)+1 {
		b.Fatalf("high watermark %d after %d records", o.Offset, int64(b.N)+1)
	}
	if _, isr, err := c.partitionMeta(ctx, adm, topic); err != nil || len(isr) != 3 {
		b.Fatalf("ISR %v after the run: %v", isr, err)
	}
}
