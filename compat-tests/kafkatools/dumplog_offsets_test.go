package kafkatools

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// offsetsPartitions is offsets.topic.num.partitions' default.
const offsetsPartitions = 50

// coordinatorPartition is the __consumer_offsets partition of a group, as
// Kafka computes it: Utils.abs(String.hashCode) % partitions.
func coordinatorPartition(group string) int {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return int(h) % offsetsPartitions
}

// offsetsRecord is one record of kafka-dump-log --offsets-decoder.
type offsetsRecord struct {
	partition int
	Key       struct {
		Type string `json:"type"`
		Data struct {
			Group     string `json:"group"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		} `json:"data"`
	}
	Payload struct {
		Data struct {
			Offset       *int64 `json:"offset"`
			ProtocolType string `json:"protocolType"`
			Generation   int32  `json:"generation"`
		} `json:"data"`
	}
}

// TestDumpLogOffsetsTopic decodes Brook's __consumer_offsets with Kafka's
// own decoder: commits and group metadata are in Kafka's record format, in
// the partition Kafka would pick for the group.
func TestDumpLogOffsetsTopic(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic, group = "compat-dump-offsets", "compat-dump-offsets-g"
	createTopic(env, topic, 2)
	produceCounts(t, env.Addr(), topic, []int{3, 5})
	if got, out, errOut := consume(env, topic, "--group", group, "--max-messages", "8"); len(got) != 8 {
		env.Fatalf(out, errOut, "consumed %d records, want 8", len(got))
	}
	env.Tool("kafka-consumer-groups.sh", "--bootstrap-server", env.Addr(), "--group", group,
		"--topic", topic+":1", "--reset-offsets", "--to-offset", "2", "--execute")
	if err := env.Brook.Stop(); err != nil {
		t.Fatalf("stop brook: %v", err)
	}

	var records []offsetsRecord
	var outs []string
	for p := range offsetsPartitions {
		seg := filepath.Join(env.Brook.DataDir(), fmt.Sprintf("__consumer_offsets-%d", p), "00000000000000000000.log")
		if st, err := os.Stat(seg); err != nil || st.Size() == 0 {
			continue
		}
		out, errOut := env.Tool("kafka-dump-log.sh", "--offsets-decoder", "--files", seg)
		outs = append(outs, out)
		for _, line := range harness.Lines(out) {
			if !strings.HasPrefix(line, "| offset:") {
				continue
			}
			_, kv, ok := strings.Cut(line, " key: ")
			key, payload, ok2 := strings.Cut(kv, " payload: ")
			r := offsetsRecord{partition: p}
			if !ok || !ok2 || json.Unmarshal([]byte(key), &r.Key) != nil || json.Unmarshal([]byte(payload), &r.Payload) != nil {
				env.Fatalf(out, errOut, "__consumer_offsets-%d: record not decoded: %q", p, line)
			}
			if r.Key.Data.Group == group {
				records = append(records, r)
			}
		}
	}
	report := strings.Join(outs, "\n")

	want := coordinatorPartition(group)
	last := map[int32]int64{}
	var commits, metadata int
	for _, r := range records {
		if r.partition != want {
			env.Errorf(report, "", "record of %s in __consumer_offsets-%d, want partition %d", group, r.partition, want)
		}
		switch r.Key.Type {
		case "0", "1": // offset commit keys, v0 and v1
			if r.Key.Data.Topic != topic || r.Payload.Data.Offset == nil {
				env.Errorf(report, "", "offset commit %+v: want topic %s with an offset", r, topic)
				continue
			}
			commits++
			last[r.Key.Data.Partition] = *r.Payload.Data.Offset
		case "2":
			metadata++
			if r.Payload.Data.ProtocolType != "consumer" && r.Payload.Data.ProtocolType != "" {
				env.Errorf(report, "", "group metadata protocolType %q, want consumer", r.Payload.Data.ProtocolType)
			}
		}
	}
	if commits < 3 || metadata == 0 || last[0] != 3 || last[1] != 2 {
		env.Fatalf(report, "", "%d commits (last offsets %v) and %d group metadata records of %s; want at least 3 commits ending at 0->3, 1->2, and group metadata",
			commits, last, metadata, group)
	}
}
