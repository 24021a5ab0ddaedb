package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/coordhash"
	"github.com/brook-mq/brook/internal/testutil"
)

const (
	// mixedSessionTimeout is every broker's zookeeper.session.timeout.ms:
	// short, so that a killed broker leaves /brokers/ids soon (a restarted
	// Brook waits 1.5 times it), and within the 10 s the test's ZooKeeper
	// grants (20 ticks of 500 ms).
	mixedSessionTimeout = 8 * time.Second
	// mixedConverge bounds a wait for the cluster to settle after a fault.
	mixedConverge = 90 * time.Second
	offsetsTopic  = "__consumer_offsets"
)

// mixedNode is one broker of a mixed cluster: a Kafka 3.9 JVM or a Brook
// process, both run by testutil.Process.
type mixedNode struct {
	id    int32
	kafka bool
	proc  *testutil.Process
	// dir and port are the node's log.dirs and listener port, kept when it
	// is restarted as the other kind (a rolling migration).
	dir  string
	port int
}

func (n *mixedNode) String() string {
	if n.kafka {
		return fmt.Sprintf("Kafka 3.9 broker %d", n.id)
	}
	return fmt.Sprintf("Brook broker %d", n.id)
}

// mixedCluster is a ZooKeeper and brokers of either kind sharing it.
type mixedCluster struct {
	t     *testing.T
	zk    *testutil.ZooKeeper
	nodes []*mixedNode
	adm   *kadm.Client
	// direct holds a client per broker that talks to it alone.
	direct map[int32]*kgo.Client
	// down is the broker that is killed, or 0.
	down int32
	// config is what every broker gets (mixedConfig).
	config map[string]string
}

// mixedConfig is what every broker of the cluster gets, Kafka key names:
// replication factor 3 for the internal topics (offsetsPartitions
// partitions each, __transaction_state as __consumer_offsets),
// min.insync.replicas 2 so that acks=all needs a second replica, and
// timeouts short enough for a test.
func mixedConfig(zk string, offsetsPartitions int) map[string]string {
	return map[string]string{
		"zookeeper.connect":                        zk,
		"zookeeper.session.timeout.ms":             strconv.Itoa(int(mixedSessionTimeout / time.Millisecond)),
		"offsets.topic.replication.factor":         "3",
		"offsets.topic.num.partitions":             strconv.Itoa(offsetsPartitions),
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"transaction.state.log.num.partitions":     strconv.Itoa(offsetsPartitions),
		// A transaction whose producer died with a broker is aborted
		// within a second of its timeout, not ten.
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
		"min.insync.replicas":              "2",
		"default.replication.factor":       "3",
		"group.initial.rebalance.delay.ms": "0",
		"replica.lag.time.max.ms":          "10000",
		"unclean.leader.election.enable":   "false",
		"auto.leader.rebalance.enable":     "false",
	}
}

// startNode starts n as its kind on its port and log dir, with the
// cluster's config, and waits until it answers ApiVersions. A Kafka 3.9
// broker runs in ZooKeeper mode at inter.broker.protocol.version 3.9.
func (c *mixedCluster) startNode(n *mixedNode) {
	c.t.Helper()
	props := maps.Clone(c.config)
	props["broker.id"] = strconv.Itoa(int(n.id))
	props["log.dirs"] = n.dir
	props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.port)
	if n.kafka {
		props["inter.broker.protocol.version"] = "3.9"
		n.proc = testutil.NewKafka39(c.t, props, n.port)
		err := n.proc.Start()
		// A Kafka broker exits when its brand-new ZooKeeper session
		// expires before it registered: a JVM starved for the session
		// timeout on a loaded machine (seen once with load 8 on 2 cores).
		// That is Kafka's startup, not the cluster under test: start it
		// once more.
		if log, _ := os.ReadFile(n.proc.LogPath()); err != nil && bytes.Contains(log, []byte("KeeperException$SessionExpiredException")) {
			c.t.Logf("%v exited at startup, its ZooKeeper session expired; starting it again", n)
			err = n.proc.Start()
		}
		if err != nil {
			c.t.Fatalf("start %v: %v\n--- log tail ---\n%s", n, err, n.proc.LogTail(40))
		}
	} else {
		n.proc = testutil.StartBrook(c.t, brookBin, props)
	}
}

// startMixedCluster starts ZooKeeper, then the Kafka brokers (the first
// becomes the controller: it registers before Brook starts), then the
// Brook brokers, ids 1.. in the order of kinds (true: Kafka).
func startMixedCluster(t *testing.T, kinds []bool, offsetsPartitions int) *mixedCluster {
	t.Helper()
	zk := testutil.StartZooKeeper(t)
	c := &mixedCluster{t: t, zk: zk, direct: map[int32]*kgo.Client{}, config: mixedConfig(zk.Connect(), offsetsPartitions)}
	for i, kafka := range kinds {
		n := &mixedNode{id: int32(i + 1), kafka: kafka, dir: filepath.Join(t.TempDir(), "data"), port: testutil.FreePort(t)}
		c.startNode(n)
		c.nodes = append(c.nodes, n)
	}
	c.adm = kadm.NewClient(testutil.Client(t, c.bootstrap()))
	c.waitBrokers(c.ids())
	return c
}

func (c *mixedCluster) bootstrap() string {
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.proc.Addr())
	}
	return strings.Join(addrs, ",")
}

func (c *mixedCluster) ids() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		ids = append(ids, n.id)
	}
	return ids
}

func (c *mixedCluster) node(id int32) *mixedNode { return c.nodes[id-1] }

// live lists the brokers that are not killed.
func (c *mixedCluster) live() []int32 {
	return slices.DeleteFunc(c.ids(), func(id int32) bool { return id == c.down })
}

// describe returns the live brokers and the controller broker id's
// metadata shows, asking that broker alone.
func (c *mixedCluster) describe(ctx context.Context, id int32) ([]int32, int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl := c.direct[id]
	if cl == nil {
		var err error
		if cl, err = kgo.NewClient(kgo.SeedBrokers(c.node(id).proc.Addr()), kgo.DialTimeout(2*time.Second)); err != nil {
			return nil, -1, err
		}
		c.direct[id] = cl
		c.t.Cleanup(cl.Close)
	}
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, -1, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, resp.ControllerID, nil
}

// waitBrokers waits until the metadata of every broker in ids lists
// exactly ids as live and the same controller among them.
func (c *mixedCluster) waitBrokers(ids []int32) {
	c.t.Helper()
	testutil.Eventually(c.t, mixedConverge, func() error {
		var views []string
		agree := true
		first := int32(-2)
		for _, id := range ids {
			got, ctrl, err := c.describe(context.Background(), id)
			views = append(views, fmt.Sprintf("broker %d: live %v, controller %d, error %v", id, got, ctrl, err))
			if first == -2 {
				first = ctrl
			}
			if err != nil || !slices.Equal(got, ids) || !slices.Contains(ids, ctrl) || ctrl != first {
				agree = false
			}
		}
		if !agree {
			return fmt.Errorf("want every broker to show live %v and one controller among them: %s", ids, strings.Join(views, "; "))
		}
		return nil
	})
}

// controller is the current controller's id.
func (c *mixedCluster) controller() int32 {
	c.t.Helper()
	var ctrl int32
	testutil.Eventually(c.t, mixedConverge, func() error {
		var err error
		_, ctrl, err = c.describe(context.Background(), c.live()[0])
		if err == nil && ctrl < 0 {
			err = errors.New("no controller")
		}
		return err
	})
	return ctrl
}

// createTopic creates topic with the given replicas per partition (the
// first is the preferred leader).
func (c *mixedCluster) createTopic(topic string, assignment [][]int32) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := req.RequestWith(ctx, testutil.Client(c.t, c.bootstrap()))
	if err == nil && resp.Topics[0].ErrorCode != 0 {
		err = fmt.Errorf("error code %d", resp.Topics[0].ErrorCode)
	}
	if err != nil {
		c.t.Fatalf("create %s: %v", topic, err)
	}
}

// mixedPartition is one partition as the metadata shows it (not
// view_test.go's partitionView, which is what a broker serves).
type mixedPartition struct {
	leader   int32
	replicas []int32
	isr      []int32
}

// partitions reads topic's partitions from the metadata.
func (c *mixedCluster) partitions(topic string) (map[int32]mixedPartition, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.adm.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := m.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s: present %v, error %v", topic, ok, td.Err)
	}
	out := map[int32]mixedPartition{}
	for p, pd := range td.Partitions {
		out[p] = mixedPartition{pd.Leader, slices.Sorted(slices.Values(pd.Replicas)), slices.Sorted(slices.Values(pd.ISR))}
	}
	return out, nil
}

// waitInSync waits until every partition of topic has a leader and every
// replica in its ISR, and returns the partitions.
func (c *mixedCluster) waitInSync(topic string, partitions int) map[int32]mixedPartition {
	c.t.Helper()
	var view map[int32]mixedPartition
	testutil.Eventually(c.t, mixedConverge, func() error {
		var err error
		if view, err = c.partitions(topic); err != nil {
			return err
		}
		if len(view) != partitions {
			return fmt.Errorf("%s has %d partitions in the metadata, want %d", topic, len(view), partitions)
		}
		for p, pv := range view {
			if pv.leader < 0 || !slices.Equal(pv.isr, pv.replicas) {
				return fmt.Errorf("%s-%d: leader %d, replicas %v, ISR %v: not every replica in sync", topic, p, pv.leader, pv.replicas, pv.isr)
			}
		}
		return nil
	})
	return view
}

// restartAfterCrash starts a killed node again. A Kafka broker exits when
// its id is still registered by its previous ZooKeeper session, so it is
// started only once the cluster has dropped it; Brook waits by itself.
func (c *mixedCluster) restartAfterCrash(n *mixedNode) {
	c.t.Helper()
	if n.kafka {
		c.waitBrokers(c.live())
	}
	if err := n.proc.Start(); err != nil {
		c.t.Fatalf("restart %v: %v\n--- log tail ---\n%s", n, err, n.proc.LogTail(40))
	}
	c.down = 0
	c.waitBrokers(c.ids())
}

// kill9 kills broker id as a crash would.
func (c *mixedCluster) kill9(id int32) {
	c.node(id).proc.Kill9()
	c.down = id
}

// groupOn returns a group id whose coordinator is partition p of an
// offsets topic with n partitions.
func groupOn(prefix string, p int32, n int32) string {
	for i := 0; ; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if coordhash.PartitionFor(g, n) == p {
			return g
		}
	}
}
