package kafkatools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// getOffsets runs kafka-get-offsets for topic with extra args and returns
// its "topic:partition:offset" lines, sorted.
func getOffsets(env *harness.Env, topic string, extra ...string) []string {
	env.T.Helper()
	out, _ := env.Tool("kafka-get-offsets.sh", append([]string{"--bootstrap-server", env.Addr(), "--topic", topic}, extra...)...)
	lines := harness.Lines(out)
	slices.Sort(lines)
	return lines
}

func TestGetOffsets(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-offsets"
	createTopic(env, topic, 3)
	produceCounts(t, env.Addr(), topic, []int{3, 5, 0})

	// Partition 0 also gets records with set timestamps, for --time lookups.
	cl := testutil.Client(t, env.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("ts"), Timestamp: base.Add(time.Duration(i) * time.Second)}
		err := cl.ProduceSync(ctx, r).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce timestamped record %d: %v", i, err)
		}
	}
	// Partition 0: offsets 0-2 stamped now, 3-5 stamped base, base+1s, base+2s.
	ms := func(d time.Duration) string { return fmt.Sprint(base.Add(d).UnixMilli()) }
	cases := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"latest by default", nil, []string{topic + ":0:6", topic + ":1:5", topic + ":2:0"}},
		{"latest -1", []string{"--time", "-1"}, []string{topic + ":0:6", topic + ":1:5", topic + ":2:0"}},
		{"earliest -2", []string{"--time", "-2"}, []string{topic + ":0:0", topic + ":1:0", topic + ":2:0"}},
		{"one partition", []string{"--partitions", "1"}, []string{topic + ":1:5"}},
		// Partition 0's records are not in timestamp order: the first offset
		// whose timestamp is >= the target is 0 (stamped now) for any past
		// target; partitions without such a record print nothing.
		{"timestamp before all", []string{"--time", ms(-time.Second), "--partitions", "0"}, []string{topic + ":0:0"}},
		{"max timestamp -3", []string{"--time", "-3", "--partitions", "0"}, nil},
	}
	for _, c := range cases {
		got := getOffsets(env, topic, c.extra...)
		if c.want == nil {
			// -3 (max timestamp) names the record with the largest timestamp:
			// one of offsets 0-2, all stamped at produce time.
			if len(got) != 1 || !slices.Contains([]string{topic + ":0:0", topic + ":0:1", topic + ":0:2"}, got[0]) {
				t.Errorf("%s: got %q, want one of %s:0:0..2", c.name, got, topic)
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: kafka-get-offsets %v printed %q, want %q", c.name, c.extra, got, c.want)
		}
	}

	// On a topic whose timestamps only grow, a lookup finds the exact offset.
	const ordered = "compat-offsets-ts"
	createTopic(env, ordered, 1)
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := &kgo.Record{Topic: ordered, Partition: 0, Value: []byte("ts"), Timestamp: base.Add(time.Duration(i) * time.Second)}
		err := cl.ProduceSync(ctx, r).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce ordered record %d: %v", i, err)
		}
	}
	for _, c := range []struct {
		target time.Duration
		want   []string
	}{
		{-time.Second, []string{ordered + ":0:0"}},
		{0, []string{ordered + ":0:0"}},
		{2 * time.Second, []string{ordered + ":0:2"}},
		{2*time.Second + time.Millisecond, []string{ordered + ":0:3"}},
		{4 * time.Second, []string{ordered + ":0:4"}},
		{5 * time.Second, nil}, // past every record: no offset, no line
	} {
		if got := getOffsets(env, ordered, "--time", ms(c.target)); !slices.Equal(got, c.want) {
			t.Errorf("--time base%+v: printed %q, want %q", c.target, got, c.want)
		}
	}
	if got := getOffsets(env, ordered, "--time", "-3"); !slices.Equal(got, []string{ordered + ":0:4"}) {
		t.Errorf("--time -3 (max timestamp): printed %q, want %s:0:4", got, ordered)
	}
}

func TestDeleteRecords(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-delete-records"
	createTopic(env, topic, 3)
	produceCounts(t, env.Addr(), topic, []int{4, 6, 2})

	spec := fmt.Sprintf(`{"version":1,"partitions":[`+
		`{"topic":%q,"partition":0,"offset":1},`+
		`{"topic":%q,"partition":1,"offset":-1}]}`, topic, topic)
	path := filepath.Join(t.TempDir(), "delete.json")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := env.Tool("kafka-delete-records.sh", "--bootstrap-server", env.Addr(), "--offset-json-file", path)
	// offset -1 means the high watermark.
	for _, want := range []string{"partition: " + topic + "-0\tlow_watermark: 1", "partition: " + topic + "-1\tlow_watermark: 6"} {
		if !strings.Contains(out, want) {
			env.Errorf(out, errOut, "kafka-delete-records: output lacks %q", want)
		}
	}
	want := []string{topic + ":0:1", topic + ":1:6", topic + ":2:0"}
	if got := getOffsets(env, topic, "--time", "-2"); !slices.Equal(got, want) {
		t.Errorf("earliest offsets after delete-records: %q, want %q", got, want)
	}

	// Consumers start at the new log start offset.
	cl := testutil.Client(t, env.Addr(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(got) < 5 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%d/%d:%s", r.Partition, r.Offset, r.Key))
		})
	}
	slices.Sort(got)
	wantRecs := []string{"0/1:k0-1", "0/2:k0-2", "0/3:k0-3", "2/0:k2-0", "2/1:k2-1"}
	if !slices.Equal(got, wantRecs) {
		t.Errorf("consumed after delete-records: %q, want %q", got, wantRecs)
	}

	// Past the high watermark is OFFSET_OUT_OF_RANGE, reported per partition.
	bad := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":2,"offset":99}]}`, topic)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ = testutil.KafkaTool(t, "kafka-delete-records.sh", "--bootstrap-server", env.Addr(), "--offset-json-file", path)
	if !strings.Contains(out+errOut, "OffsetOutOfRange") {
		env.Errorf(out, errOut, "delete-records past the high watermark: want an OffsetOutOfRange error")
	}
}
