package broker

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/log"
)

// TestAlterReplicaLogDirsMovesAReplica: AlterReplicaLogDirs moves a
// partition to the broker's other log dir while it serves; DescribeLogDirs
// then lists it there, and every record is still there to consume.
func TestAlterReplicaLogDirsMovesAReplica(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	tb := startBroker(t, map[string]string{"log.dirs": dirs[0] + "," + dirs[1], "offsets.topic.num.partitions": "1"})
	const topic = "move-me"
	tb.createTopic(topic, 1, nil)
	ctx := testContext(t)
	cl := tb.client(kgo.DefaultProduceTopic(topic))
	for i := range 200 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	l := tb.b.logs.Get(log.TopicPartition{Topic: topic, Partition: 0})
	from := filepath.Dir(l.Dir())
	to := dirs[0]
	if from == dirs[0] {
		to = dirs[1]
	}

	alter := func(dir string, partitions ...int32) []int16 {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		req.SetVersion(2)
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = dir
		rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		rt.Topic, rt.Partitions = topic, partitions
		d.Topics = append(d.Topics, rt)
		req.Dirs = append(req.Dirs, d)
		resp := tb.roundTrip(req).(*kmsg.AlterReplicaLogDirsResponse)
		var codes []int16
		for _, p := range resp.Topics[0].Partitions {
			codes = append(codes, p.ErrorCode)
		}
		return codes
	}
	if codes := alter(filepath.Join(root, "elsewhere"), 0); codes[0] != kerr.LogDirNotFound.Code {
		t.Fatalf("unknown dir: %v, want LOG_DIR_NOT_FOUND", codes)
	}
	if codes := alter(to, 0, 7); codes[0] != 0 || codes[1] != kerr.ReplicaNotAvailable.Code {
		t.Fatalf("move: %v, want [0 REPLICA_NOT_AVAILABLE]", codes)
	}

	describe := func() map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.SetVersion(4)
		resp := tb.roundTrip(req).(*kmsg.DescribeLogDirsResponse)
		out := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for _, d := range resp.Dirs {
			for _, rt := range d.Topics {
				if rt.Topic == topic {
					out[d.Dir] = rt.Partitions
				}
			}
		}
		return out
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		got := describe()
		if len(got[from]) != 0 || len(got[to]) != 1 || got[to][0].IsFuture {
			return fmt.Errorf("replica still moving: %+v", got)
		}
		return nil
	})
	if got := filepath.Dir(l.Dir()); got != to {
		t.Fatalf("log in %s, want %s", got, to)
	}
	for i := 200; i < 210; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := tb.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for n := 0; n < 210; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("v%d", n); string(r.Value) != want || r.Offset != int64(n) {
				t.Fatalf("record %d: offset %d %q", n, r.Offset, r.Value)
			}
			n++
		})
	}
}
