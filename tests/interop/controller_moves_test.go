package interop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/internal/workload"
)

// TestControllerMoves: ZooKeeper, Brook broker 1 (started first, so the
// first controller) and Kafka 3.9 brokers 2 and 3, under an idempotent
// acks=all producer and a reader on an RF=3 topic. While Brook is the
// controller, a topic is created, gets partitions added, has a partition
// reassigned and is deleted, every step involving the Kafka brokers'
// replicas; then Brook, the controller, is killed with kill -9, a Kafka
// broker takes over, Brook is restarted, and the same steps run under the
// Kafka controller, involving Brook's replicas. With $INTEROP_FULL (make
// interop) the steps run through Kafka 3.9's own kafka-topics.sh and
// kafka-reassign-partitions.sh (else through the same admin requests from
// franz-go, which cost no JVM start), and the Kafka controller is killed
// in turn until Brook is the controller again, for a third round. Each
// round is checked in the metadata, in ZooKeeper (no deletion marker or
// topic znode left) and in each broker's log dir, and with Kafka 3.9's
// kafka-topics.sh --describe; the workload's checkers decide the run.
func TestControllerMoves(t *testing.T) {
	const (
		topic             = "moves"
		offsetsPartitions = 3
	)
	full := os.Getenv("INTEROP_FULL") != ""
	start := time.Now()
	c := startMixedCluster(t, []bool{false, true, true}, offsetsPartitions)
	if ctrl := c.controller(); ctrl != 1 {
		t.Fatalf("controller is broker %d, want Brook 1 (started first)", ctrl)
	}
	assignment := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	c.createTopic(topic, assignment)
	c.waitInSync(topic, len(assignment))
	w := workload.StartWriter(t, c.bootstrap(), topic, int32(len(assignment)))
	r := workload.StartReader(t, c.bootstrap(), topic, int32(len(assignment)))
	w.WaitAcked(t, 50, mixedConverge)

	c.adminRound("brook-ctl", full)
	feature := c.znode("/feature")
	t.Logf("(%v) round under Brook controller done; /feature %s", time.Since(start).Round(time.Second), feature)

	// kill -9 the Brook controller: only Kafka brokers are left to win.
	c.kill9(1)
	w.WaitAcked(t, w.Acked()+30, mixedConverge)
	c.restartAfterCrash(c.node(1))
	ctrl := c.controller()
	if !c.node(ctrl).kafka {
		t.Fatalf("controller after Brook's crash is %v, want a Kafka broker", c.node(ctrl))
	}
	c.waitInSync(topic, len(assignment))
	c.adminRound("kafka-ctl", full)
	feature = c.znode("/feature")
	t.Logf("(%v) round under %v as controller done; /feature %s", time.Since(start).Round(time.Second), c.node(ctrl), feature)

	if full {
		// kill -9 the Kafka controller until Brook wins an election.
		for c.node(ctrl).kafka {
			c.kill9(ctrl)
			w.WaitAcked(t, w.Acked()+30, mixedConverge)
			c.restartAfterCrash(c.node(ctrl))
			ctrl = c.controller()
			t.Logf("controller now %v", c.node(ctrl))
		}
		c.waitInSync(topic, len(assignment))
		// Brook, elected after a Kafka controller, leaves /feature as
		// Kafka wrote it.
		if got := c.znode("/feature"); got != feature {
			t.Errorf("/feature after Brook's election: %s, want it left as the Kafka controller wrote it: %s", got, feature)
		}
		c.adminRound("brook-ctl-again", full)
	}

	w.WaitAcked(t, w.Acked()+30, mixedConverge)
	rep := c.verifyRun(topic, int32(len(assignment)), w, r, nil)
	t.Logf("controller moves checked in %v: %d produced, %d acknowledged, %d failed, %d skipped, %d in the final log; producer errors (retried) %v",
		time.Since(start).Round(time.Second), rep.Produced, rep.Acked, rep.Failed, rep.Skipped, rep.Final, w.Errors())
}

// adminRound creates topic name with RF 2 (partition 0 on the controller's
// other kind and broker 1's, partition 1 the reverse), adds a partition,
// reassigns partition 0 so that one replica moves to a broker of the other
// kind, and deletes the topic, waiting for each step to take effect on
// every broker. viaTools runs the steps with Kafka 3.9's command-line
// tools.
func (c *mixedCluster) adminRound(name string, viaTools bool) {
	t := c.t
	t.Helper()
	ctrl := c.controller()
	begin := time.Now()
	// Partition 0 on Kafka 2 and Brook 1, partition 1 on Kafka 3 and Kafka 2.
	initial := [][]int32{{2, 1}, {3, 2}}
	target := []int32{3, 1} // partition 0: Kafka 2's replica moves to Kafka 3
	if !c.node(ctrl).kafka {
		// Under the Brook controller move a Kafka replica onto Brook instead.
		initial = [][]int32{{2, 3}, {3, 1}}
		target = []int32{1, 3}
	}
	if viaTools {
		var parts []string
		for _, rs := range initial {
			parts = append(parts, joinIDs(rs, ":"))
		}
		c.tool("kafka-topics.sh", "--create", "--topic", name, "--replica-assignment", strings.Join(parts, ","))
	} else {
		c.createTopic(name, initial)
	}
	c.waitInSync(name, 2)

	// A third partition, placed by the controller.
	if viaTools {
		c.tool("kafka-topics.sh", "--alter", "--topic", name, "--partitions", "3")
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resp, err := c.adm.CreatePartitions(ctx, 1, name)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("add a partition to %s: %v", name, err)
		}
	}
	c.waitInSync(name, 3)

	// Reassign partition 0 and wait until it is done.
	if viaTools {
		plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%s]}]}`, name, joinIDs(target, ","))
		path := filepath.Join(t.TempDir(), "reassign.json")
		if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
			t.Fatal(err)
		}
		c.tool("kafka-reassign-partitions.sh", "--execute", "--reassignment-json-file", path)
		testutil.Eventually(t, mixedConverge, func() error {
			out, _, err := testutil.Kafka39Tool(t, "kafka-reassign-partitions.sh", "--bootstrap-server", c.bootstrap(), "--verify", "--reassignment-json-file", path)
			if err != nil {
				return err
			}
			if !strings.Contains(out, "Reassignment of partition "+name+"-0 is completed") {
				return fmt.Errorf("reassignment not complete: %s", out)
			}
			return nil
		})
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req := kadm.AlterPartitionAssignmentsReq{}
		req.Assign(name, 0, target)
		resp, err := c.adm.AlterPartitionAssignments(ctx, req)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("reassign %s-0: %v", name, err)
		}
	}
	testutil.Eventually(t, mixedConverge, func() error {
		view, err := c.partitions(name)
		if err != nil {
			return err
		}
		want := slices.Sorted(slices.Values(target))
		if p := view[0]; !slices.Equal(p.replicas, want) || !slices.Equal(p.isr, want) || p.leader < 0 {
			return fmt.Errorf("%s-0: leader %d, replicas %v, ISR %v; want replicas and ISR %v", name, p.leader, p.replicas, p.isr, want)
		}
		if z := c.znode("/admin/reassign_partitions"); z != "" {
			return fmt.Errorf("/admin/reassign_partitions still %s", z)
		}
		return nil
	})
	c.describeMatches(name, 3, map[int32][]int32{0: target})
	// The replica moved off its broker is deleted there.
	removed := slices.DeleteFunc(slices.Clone(initial[0]), func(id int32) bool { return slices.Contains(target, id) })
	for _, id := range removed {
		c.waitNoLogDir(id, name+"-0")
	}

	// Delete it: every broker forgets it, every replica's dir goes, and
	// ZooKeeper keeps neither the marker nor the topic.
	if viaTools {
		c.tool("kafka-topics.sh", "--delete", "--topic", name)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resp, err := c.adm.DeleteTopics(ctx, name)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	err := testutil.Poll(mixedConverge, func() error {
		for _, path := range []string{"/admin/delete_topics/" + name, "/brokers/topics/" + name, "/config/topics/" + name} {
			if z := c.znode(path); z != "" {
				return fmt.Errorf("%s still there: %q", path, z)
			}
		}
		for _, id := range c.ids() {
			if err := c.brokerForgot(id, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("delete %s: %v\n%s", name, err, c.logLinesAbout(name))
	}
	for _, id := range c.ids() {
		for p := 0; p < 3; p++ {
			c.waitNoLogDir(id, fmt.Sprintf("%s-%d", name, p))
		}
	}
	t.Logf("admin round %s under controller %v (create, add partition, reassign %v -> %v, delete) done in %v",
		name, c.node(ctrl), initial[0], target, time.Since(begin).Round(100*time.Millisecond))
	if got := c.controller(); got != ctrl {
		t.Fatalf("controller moved from %d to %d during the round: the round did not test one kind", ctrl, got)
	}
}

// tool runs a Kafka 3.9 command-line tool against the cluster.
func (c *mixedCluster) tool(name string, args ...string) string {
	c.t.Helper()
	out, errOut, err := testutil.Kafka39Tool(c.t, name, append([]string{"--bootstrap-server", c.bootstrap()}, args...)...)
	if err != nil {
		c.t.Fatalf("%s %v: %v\n%s\n%s", name, args, err, out, errOut)
	}
	return out
}

// describeMatches checks topic with Kafka 3.9's kafka-topics.sh
// --describe: the partition count, and for each partition a leader among
// its replicas, every replica in sync, and the replicas of want (in
// order) where given.
func (c *mixedCluster) describeMatches(topic string, partitions int, want map[int32][]int32) {
	c.t.Helper()
	testutil.Eventually(c.t, mixedConverge, func() error {
		out, _, err := testutil.Kafka39Tool(c.t, "kafka-topics.sh", "--bootstrap-server", c.bootstrap(), "--describe", "--topic", topic)
		if err != nil {
			return err
		}
		seen := 0
		for _, line := range strings.Split(out, "\n") {
			f := describeFields(line)
			if f["PartitionCount"] != "" && f["PartitionCount"] != strconv.Itoa(partitions) {
				return fmt.Errorf("kafka-topics --describe: %s", line)
			}
			p, ok := f["Partition"]
			if !ok {
				continue
			}
			seen++
			pid, _ := strconv.Atoi(p)
			replicas, isr := f["Replicas"], f["Isr"]
			if w, ok := want[int32(pid)]; ok && replicas != joinIDs(w, ",") {
				return fmt.Errorf("kafka-topics --describe: replicas %s, want %v: %s", replicas, w, line)
			}
			if !sameSet(replicas, isr) || !slices.Contains(strings.Split(replicas, ","), f["Leader"]) {
				return fmt.Errorf("kafka-topics --describe: not every replica in sync: %s", line)
			}
		}
		if seen != partitions {
			return fmt.Errorf("kafka-topics --describe listed %d partitions, want %d:\n%s", seen, partitions, out)
		}
		return nil
	})
}

// describeFields splits a line of kafka-topics --describe ("Topic: t
// Partition: 0 Leader: 1 Replicas: 1,2 Isr: 1,2 ...") into its fields.
func describeFields(line string) map[string]string {
	out := map[string]string{}
	words := strings.Fields(line)
	for i := 0; i+1 < len(words); i++ {
		if k, ok := strings.CutSuffix(words[i], ":"); ok {
			out[k] = words[i+1]
			i++
		}
	}
	return out
}

func sameSet(a, b string) bool {
	x, y := strings.Split(a, ","), strings.Split(b, ",")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func joinIDs(ids []int32, sep string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, sep)
}

// brokerForgot asks broker id alone (not any broker its client knows)
// for topic's metadata and fails unless it answers UNKNOWN_TOPIC_OR_PARTITION.
func (c *mixedCluster) brokerForgot(id int32, topic string) error {
	if _, _, err := c.describe(context.Background(), id); err != nil {
		return fmt.Errorf("broker %d: %w", id, err)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.direct[id].Broker(int(id)))
	if err != nil {
		return fmt.Errorf("metadata from broker %d: %w", id, err)
	}
	for _, mt := range resp.Topics {
		if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			var parts []string
			for _, p := range mt.Partitions {
				parts = append(parts, fmt.Sprintf("%d: leader %d replicas %v isr %v error %d", p.Partition, p.Leader, p.Replicas, p.ISR, p.ErrorCode))
			}
			return fmt.Errorf("%v still lists %s (error %d): %v", c.node(id), topic, mt.ErrorCode, parts)
		}
	}
	return nil
}

// waitNoLogDir waits until broker id's log dir has no directory named
// dir (a partition's replica; Kafka first renames a deleted one to
// <dir>.<uuid>-delete and removes it later, which counts as gone).
func (c *mixedCluster) waitNoLogDir(id int32, dir string) {
	c.t.Helper()
	path := filepath.Join(c.node(id).dir, dir)
	testutil.Eventually(c.t, mixedConverge, func() error {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%v still has %s (stat: %v)", c.node(id), path, err)
		}
		return nil
	})
}

// znode reads path from the cluster's ZooKeeper, "" if it does not exist.
func (c *mixedCluster) znode(path string) string {
	c.t.Helper()
	conn, _, err := zk.Connect([]string{c.zk.Connect()}, 10*time.Second,
		zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		c.t.Fatalf("connect to zookeeper: %v", err)
	}
	defer conn.Close()
	data, _, err := conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return ""
	}
	if err != nil {
		c.t.Fatalf("read %s: %v", path, err)
	}
	if len(data) == 0 {
		return "(empty)"
	}
	return string(data)
}

// logLinesAbout collects the lines of every broker's log that mention
// what, for a failure's report.
func (c *mixedCluster) logLinesAbout(what string) string {
	var b strings.Builder
	for _, n := range c.nodes {
		data, err := os.ReadFile(n.proc.LogPath())
		if err != nil {
			fmt.Fprintf(&b, "--- %v: %v\n", n, err)
			continue
		}
		fmt.Fprintf(&b, "--- %v, lines about %s ---\n", n, what)
		// Lines naming it, and every error with its stack trace.
		trace := 0
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, " ERROR ") || strings.Contains(line, "level=ERROR") {
				trace = 12
			}
			if trace > 0 || strings.Contains(line, what) {
				b.WriteString(line)
				b.WriteByte('\n')
			}
			if trace > 0 {
				trace--
			}
		}
	}
	return b.String()
}
