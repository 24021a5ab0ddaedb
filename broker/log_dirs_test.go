package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/log"
)

// TestLogDirFailureMovesOnlyItsLeaders: a broker with two log dirs loses
// one (the directory is replaced by a file, which fails for root too). Its
// replicas there go offline: clients get KAFKA_STORAGE_ERROR from it, the
// controller hears of it through /log_dir_event_notification and moves
// their leadership away, and the metadata lists them offline; the
// partitions it leads from its other dir stay with it and keep serving.
func TestLogDirFailureMovesOnlyItsLeaders(t *testing.T) {
	root := t.TempDir()
	dirsOf := func(id int32) []string {
		return []string{filepath.Join(root, strconv.Itoa(int(id)), "a"), filepath.Join(root, strconv.Itoa(int(id)), "b")}
	}
	c := startReplClusterConfigs(t, func(id int32) map[string]string {
		d := dirsOf(id)
		return map[string]string{"log.dirs": d[0] + "," + d[1], "replica.high.watermark.checkpoint.interval.ms": "200"}
	}, nil)
	ctx := testContext(t)
	adm := kadm.NewClient(c.client())
	const topic = "jbod"
	testutil.Eventually(t, 30*time.Second, func() error {
		if bs, err := adm.ListBrokers(ctx); err != nil || len(bs) != 3 {
			return fmt.Errorf("brokers %v: %v", bs, err)
		}
		return nil
	})
	if resp, err := adm.CreateTopic(ctx, 12, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	leaders := func() (map[int32]int32, map[int32][]int32, map[int32][]int32, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return nil, nil, nil, err
		}
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != 12 {
			return nil, nil, nil, fmt.Errorf("topic: %v, %d partitions", td.Err, len(td.Partitions))
		}
		l, isr, off := map[int32]int32{}, map[int32][]int32{}, map[int32][]int32{}
		for p, pd := range td.Partitions {
			l[p], isr[p], off[p] = pd.Leader, pd.ISR, pd.OfflineReplicas
		}
		return l, isr, off, nil
	}
	var before map[int32]int32
	testutil.Eventually(t, 30*time.Second, func() error {
		l, isr, _, err := leaders()
		if err != nil {
			return err
		}
		for p, id := range l {
			if len(isr[p]) != 3 {
				return fmt.Errorf("partition %d ISR %v", p, isr[p])
			}
			// Metadata can name a leader before that broker has
			// opened the log (LeaderAndISR still in flight).
			if c.brokers[id] == nil || c.brokers[id].b.logs.Get(log.TopicPartition{Topic: topic, Partition: p}) == nil {
				return fmt.Errorf("partition %d: leader %d has not opened its log yet", p, id)
			}
		}
		before = l
		return nil
	})
	// A broker that leads partitions in both its dirs: fail the dir of one.
	// Brokers other than the controller come first, so that its answers
	// cross the wire (v5+ LeaderAndISR answers name topics by id only).
	var victim int32
	var failed string
	var lost, kept []int32
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	order := []int32{1, 2, 3}
	slices.SortStableFunc(order, func(a, b int32) int {
		return boolInt(a == md.Controller) - boolInt(b == md.Controller)
	})
	for _, id := range order {
		if victim != 0 {
			break
		}
		byDir := map[string][]int32{}
		for p, l := range before {
			if l == id {
				lg := c.brokers[id].b.logs.Get(log.TopicPartition{Topic: topic, Partition: p})
				byDir[filepath.Dir(lg.Dir())] = append(byDir[filepath.Dir(lg.Dir())], p)
			}
		}
		d := dirsOf(id)
		if len(byDir[d[0]]) > 0 && len(byDir[d[1]]) > 0 {
			victim, failed, lost, kept = id, d[0], byDir[d[0]], byDir[d[1]]
		}
	}
	if victim == 0 {
		t.Fatalf("no broker leads partitions in both dirs: %v", before)
	}
	if err := os.Rename(failed, failed+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(failed, []byte("disk gone"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Leadership of the lost partitions moves; the kept ones stay.
	testutil.Eventually(t, 60*time.Second, func() error {
		l, isr, off, err := leaders()
		if err != nil {
			return err
		}
		for _, p := range lost {
			if l[p] == victim || slices.Contains(isr[p], victim) || !slices.Contains(off[p], victim) {
				return fmt.Errorf("partition %d: leader %d ISR %v offline %v", p, l[p], isr[p], off[p])
			}
		}
		for _, p := range kept {
			if l[p] != victim || !slices.Contains(isr[p], victim) {
				return fmt.Errorf("kept partition %d: leader %d ISR %v", p, l[p], isr[p])
			}
		}
		return nil
	})

	// The victim answers KAFKA_STORAGE_ERROR for a lost partition and
	// serves a kept one.
	fetch := func(p int32) int16 {
		req := rackFetch(11, topic, "", 0)
		req.Topics[0].Partitions[0].Partition = p
		return c.brokers[victim].roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := fetch(lost[0]); code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch of lost partition %d from broker %d: error %d, want KAFKA_STORAGE_ERROR", lost[0], victim, code)
	}
	if code := fetch(kept[0]); code != 0 {
		t.Fatalf("fetch of kept partition %d: error %d", kept[0], code)
	}
	// Producing to every partition works: the lost ones at their new leaders.
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range append(slices.Clone(lost), kept...) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("after")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	// DescribeLogDirs lists the failed dir with KAFKA_STORAGE_ERROR.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	dresp := c.brokers[victim].roundTrip(req).(*kmsg.DescribeLogDirsResponse)
	codes := map[string]int16{}
	for _, d := range dresp.Dirs {
		codes[d.Dir] = d.ErrorCode
		if d.Dir == failed && len(d.Topics) != 0 {
			t.Fatalf("failed dir lists topics: %+v", d.Topics)
		}
	}
	if codes[failed] != kerr.KafkaStorageError.Code || codes[dirsOf(victim)[1]] != 0 {
		t.Fatalf("DescribeLogDirs codes %v", codes)
	}
}
