package kafkatools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// The client APIs kafka-broker-api-versions must find usable, with the
// lowest maximum version Kafka 4.x tools need.
var usableAPIs = map[string]int{
	"Produce(0)": 9, "Fetch(1)": 12, "ListOffsets(2)": 7, "Metadata(3)": 12,
	"OffsetCommit(8)": 8, "OffsetFetch(9)": 8, "FindCoordinator(10)": 4,
	"JoinGroup(11)": 9, "Heartbeat(12)": 4, "LeaveGroup(13)": 5, "SyncGroup(14)": 5,
	"DescribeGroups(15)": 5, "ListGroups(16)": 4, "ApiVersions(18)": 3,
	"CreateTopics(19)": 7, "DeleteTopics(20)": 6, "DeleteRecords(21)": 2,
	"InitProducerId(22)": 4, "DescribeConfigs(32)": 4, "CreatePartitions(37)": 3,
	"DeleteGroups(42)": 2, "ElectLeaders(43)": 2, "IncrementalAlterConfigs(44)": 1, "OffsetDelete(47)": 0,
	"DescribeCluster(60)": 1,
}

var apiVersionLine = regexp.MustCompile(`^\s*(\w+\(\d+\)): (.*?),?$`)

func TestBrokerAPIVersions(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	out, errOut := env.Tool("kafka-broker-api-versions.sh", "--bootstrap-server", env.Addr())
	if !strings.Contains(out, env.Addr()+" (id: 0 rack: null") {
		env.Fatalf(out, errOut, "no entry for broker 0 at %s", env.Addr())
	}
	seen := map[string]string{}
	for _, line := range harness.Lines(out) {
		if m := apiVersionLine.FindStringSubmatch(line); m != nil {
			seen[m[1]] = m[2]
		}
	}
	usable := regexp.MustCompile(`\[usable: (\d+)\]$`)
	for api, min := range usableAPIs {
		m := usable.FindStringSubmatch(seen[api])
		if m == nil {
			env.Errorf(out, errOut, "%s: %q, want a usable version", api, seen[api])
			continue
		}
		if v := atoi(t, m[1]); v < min {
			env.Errorf(out, errOut, "%s: usable version %d, want at least %d", api, v, min)
		}
	}
}

func TestLogDirs(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-log-dirs"
	createTopic(env, topic, 2)
	produceCounts(t, env.Addr(), topic, []int{10, 0})
	out, errOut := env.Tool("kafka-log-dirs.sh", "--bootstrap-server", env.Addr(), "--describe", "--topic-list", topic)
	var doc struct {
		Brokers []struct {
			Broker  int32
			LogDirs []struct {
				LogDir     string
				Error      *string
				Partitions []struct {
					Partition string
					Size      int64
					OffsetLag int64
					IsFuture  bool
				}
			}
		}
	}
	lines := harness.Lines(out)
	if len(lines) == 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &doc) != nil {
		env.Fatalf(out, errOut, "kafka-log-dirs: last line is not its JSON report")
	}
	if len(doc.Brokers) != 1 || doc.Brokers[0].Broker != 0 || len(doc.Brokers[0].LogDirs) != 1 {
		env.Fatalf(out, errOut, "want broker 0 with one log dir")
	}
	dir := doc.Brokers[0].LogDirs[0]
	if dir.LogDir != env.Brook.DataDir() || dir.Error != nil {
		env.Errorf(out, errOut, "log dir %q (error %v), want %q without error", dir.LogDir, dir.Error, env.Brook.DataDir())
	}
	sizes := map[string]int64{}
	for _, p := range dir.Partitions {
		sizes[p.Partition] = p.Size
		if p.OffsetLag != 0 || p.IsFuture {
			env.Errorf(out, errOut, "%s: offsetLag %d isFuture %v, want 0 and false", p.Partition, p.OffsetLag, p.IsFuture)
		}
	}
	if len(sizes) != 2 || sizes[topic+"-0"] <= 0 || sizes[topic+"-1"] != 0 {
		env.Errorf(out, errOut, "partition sizes %v: want %s-0 > 0 and %s-1 = 0", sizes, topic, topic)
	}
}

func TestClusterID(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	out, errOut := env.Tool("kafka-cluster.sh", "cluster-id", "--bootstrap-server", env.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta, err := kadm.NewClient(testutil.Client(t, env.Addr())).BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	if meta.Cluster == "" || strings.TrimSpace(out) != "Cluster ID: "+meta.Cluster {
		env.Errorf(out, errOut, "want \"Cluster ID: %s\" (Metadata's cluster id)", meta.Cluster)
	}
}

// TestConsumerGroupsLiveMembers describes a group while two franz-go
// members are in it.
func TestConsumerGroupsLiveMembers(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic, group = "compat-groups-live", "compat-groups-live-g"
	createTopic(env, topic, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 2 {
		cl := testutil.Client(t, env.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprintf("member-%d", i)))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
		// Stop polling before the client closes at cleanup (cleanups run last-in first-out).
		t.Cleanup(func() { cancel(); <-done })
	}
	bs := []string{"--bootstrap-server", env.Addr(), "--describe", "--group", group}
	var out, errOut string
	testutil.Eventually(t, 60*time.Second, func() error {
		var err error
		out, errOut, err = testutil.KafkaTool(t, "kafka-consumer-groups.sh", append(bs, "--state")...)
		if err != nil {
			return err
		}
		f := strings.Fields(lastLine(out))
		if len(f) < 2 || f[len(f)-2] != "Stable" || f[len(f)-1] != "2" {
			return fmt.Errorf("--state: %q, want Stable with 2 members", lastLine(out))
		}
		return nil
	})
	if !strings.Contains(out, env.Addr()+"  (0)") || !strings.Contains(out, "range") && !strings.Contains(out, "cooperative-sticky") {
		env.Errorf(out, errOut, "--state: want coordinator %s (0) and the members' assignment strategy", env.Addr())
	}

	out, errOut = env.Tool("kafka-consumer-groups.sh", append(bs, "--members")...)
	clients, partitions := map[string]bool{}, 0
	for _, line := range harness.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == group {
			clients[f[3]] = true
			partitions += atoi(t, f[4])
		}
	}
	if !clients["member-0"] || !clients["member-1"] || partitions != 4 {
		env.Errorf(out, errOut, "--members: clients %v holding %d partitions, want member-0 and member-1 holding 4", clients, partitions)
	}

	// A group with members cannot be deleted.
	out, errOut, _ = testutil.KafkaTool(t, "kafka-consumer-groups.sh", "--bootstrap-server", env.Addr(), "--delete", "--group", group)
	if !strings.Contains(out+errOut, "NonEmptyGroup") && !strings.Contains(out+errOut, "not empty") {
		env.Errorf(out, errOut, "--delete of a group with members: want a NON_EMPTY_GROUP error")
	}
}

func lastLine(out string) string {
	lines := harness.Lines(out)
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

// TestLeaderElection: on one node every partition already has its
// preferred (and only) replica as leader.
func TestLeaderElection(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-election"
	createTopic(env, topic, 2)
	bs := []string{"--bootstrap-server", env.Addr()}

	for _, typ := range []string{"preferred", "unclean"} {
		out, errOut := env.Tool("kafka-leader-election.sh", append(bs, "--election-type", typ, "--topic", topic, "--partition", "1")...)
		if want := "Valid replica already elected for partitions " + topic + "-1"; !strings.Contains(out, want) {
			env.Errorf(out, errOut, "--election-type %s: want %q", typ, want)
		}
	}
	// Partitions that need no election are left out of an all-partitions answer.
	out, errOut := env.Tool("kafka-leader-election.sh", append(bs, "--election-type", "preferred", "--all-topic-partitions")...)
	if strings.TrimSpace(out) != "" {
		env.Errorf(out, errOut, "--all-topic-partitions: want no output when no election is needed")
	}
	out, errOut, err := testutil.KafkaTool(t, "kafka-leader-election.sh", append(bs, "--election-type", "preferred", "--topic", "compat-no-such-topic", "--partition", "0")...)
	if err == nil || !strings.Contains(out+errOut, "UnknownTopicOrPartitionException") {
		env.Errorf(out, errOut, "unknown partition: err %v, want a failure naming UnknownTopicOrPartitionException", err)
	}
}
