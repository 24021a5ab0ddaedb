package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

const (
	// sessionTimeout is the brokers' zookeeper.session.timeout.ms: short, so
	// that a killed broker is noticed in seconds (most of the package's time
	// is spent waiting for killed brokers' sessions to expire), but inside
	// ZooKeeper's bounds (2 to 20 ticks of 500 ms) and long enough for a
	// loaded machine: the ZooKeeper client pings every third of it and drops
	// a connection silent for two thirds, and after a ZooKeeper restart the
	// brokers must reconnect within it.
	sessionTimeout = 4 * time.Second
	// convergeTimeout bounds how long the cluster may take to settle after
	// a fault: a session timeout to notice it plus elections and metadata
	// propagation, with room for a loaded 2-core machine.
	convergeTimeout = 90 * time.Second
	// requestTimeout bounds one request the tests send to one broker.
	requestTimeout = 5 * time.Second
)

// cluster is a ZooKeeper server and brokers with ids 1..n, all processes.
type cluster struct {
	t       *testing.T
	size    int
	zk      *testutil.ZooKeeper
	zkv     *zkView
	ids     []int32
	brokers map[int32]*testutil.Process
	paused  map[int32]bool
	meta    map[int32]*kgo.Client // one client per broker for Metadata
	// each adds broker id's own configs (broker.rack, log.dirs) when set.
	each func(id int32) map[string]string
	// inter secures the inter-broker listener (nil: PLAINTEXT), from
	// $BROOK_CLUSTER_INTER_BROKER or startClusterInter.
	inter *interBroker
}

// startCluster starts ZooKeeper and n brokers with the tests' defaults plus
// overrides (Kafka key names), and waits until every broker is registered
// and one is the controller.
func startCluster(t *testing.T, n int, overrides map[string]string) *cluster {
	t.Helper()
	return startClusterEach(t, n, overrides, nil)
}

// startClusterEach is startCluster with each(id) (nil: none) added to
// broker id's configs, for settings that differ between brokers.
func startClusterEach(t *testing.T, n int, overrides map[string]string, each func(id int32) map[string]string) *cluster {
	t.Helper()
	return startClusterInter(t, n, overrides, each, os.Getenv(interBrokerEnv))
}

// startClusterInter is startClusterEach with an inter-broker listener of
// protocol (SSL, SASL_SSL; "" or PLAINTEXT: none of its own).
func startClusterInter(t *testing.T, n int, overrides map[string]string, each func(id int32) map[string]string, protocol string) *cluster {
	t.Helper()
	c := &cluster{
		each:    each,
		t:       t,
		size:    n,
		zk:      testutil.StartZooKeeper(t),
		brokers: map[int32]*testutil.Process{},
		paused:  map[int32]bool{},
		meta:    map[int32]*kgo.Client{},
	}
	c.zkv = dialZK(t, c.zk.Connect())
	if protocol != "" && protocol != "PLAINTEXT" {
		c.inter = newInterBroker(t, protocol, c.zk.Connect()+zkChroot)
	}
	for i := 1; i <= n; i++ {
		id := int32(i)
		c.ids = append(c.ids, id)
		c.brokers[id] = testutil.StartBrook(t, brookBin, c.brokerConfig(id, overrides))
	}
	// Registered after the brokers' own cleanups, so it runs before them: a
	// stopped process would ignore their SIGTERM.
	t.Cleanup(c.resumeAll)
	t.Cleanup(func() {
		if t.Failed() {
			c.keepLogs()
			t.Logf("rerun: make build && BROOK_BIN=$PWD/bin/brook go test -count=1 -v -run '^%s$' ./tests/cluster", strings.Split(t.Name(), "/")[0])
		}
	})
	c.waitRegistered(c.ids)
	return c
}

// brokerConfig is broker id's server.properties: ZooKeeper with a chroot,
// replication factor 3 for new and internal topics, short session timeout;
// with c.inter its INTERNAL listener, unless the test sets the listeners.
func (c *cluster) brokerConfig(id int32, overrides map[string]string) map[string]string {
	rf := strconv.Itoa(min(3, c.size))
	cfg := map[string]string{
		"broker.id":                        strconv.Itoa(int(id)),
		"zookeeper.connect":                c.zk.Connect() + zkChroot,
		"zookeeper.session.timeout.ms":     strconv.Itoa(int(sessionTimeout.Milliseconds())),
		"default.replication.factor":       rf,
		"offsets.topic.replication.factor": rf,
		// The last broker of a cluster to stop has nowhere to move its
		// leaderships, so its controlled shutdown is retried, as Kafka's
		// is; Kafka's 5 s backoff would add 10 s to every test's teardown.
		"controlled.shutdown.retry.backoff.ms": "500",
	}
	var own map[string]string
	if c.each != nil {
		own = c.each(id)
	}
	if c.inter != nil && overrides["listeners"] == "" && own["listeners"] == "" {
		maps.Copy(cfg, c.inter.config(id))
	}
	maps.Copy(cfg, overrides)
	maps.Copy(cfg, own)
	return cfg
}

func (c *cluster) broker(id int32) *testutil.Process {
	c.t.Helper()
	p, ok := c.brokers[id]
	if !ok {
		c.t.Fatalf("no broker %d in this cluster", id)
	}
	return p
}

// bootstrap lists every broker's address, running or not.
func (c *cluster) bootstrap() string {
	var addrs []string
	for _, id := range c.ids {
		addrs = append(addrs, c.brokers[id].Addr())
	}
	return strings.Join(addrs, ",")
}

// others returns the broker ids except the given ones.
func (c *cluster) others(except ...int32) []int32 {
	var out []int32
	for _, id := range c.ids {
		if !slices.Contains(except, id) {
			out = append(out, id)
		}
	}
	return out
}

// waitRegistered waits until exactly ids are registered in /brokers/ids
// and /controller names one of them.
func (c *cluster) waitRegistered(ids []int32) {
	c.t.Helper()
	testutil.Eventually(c.t, convergeTimeout, func() error {
		got, _, err := c.zkv.brokerIDs()
		if err != nil {
			return err
		}
		if !slices.Equal(got, ids) {
			return fmt.Errorf("/brokers/ids = %v, want %v", got, ids)
		}
		ctrl, err := c.zkv.controllerID()
		if err != nil {
			return err
		}
		if !slices.Contains(ids, ctrl) {
			return fmt.Errorf("/controller names broker %d, want one of %v", ctrl, ids)
		}
		return nil
	})
}

// controller returns the broker id in /controller, failing when none.
func (c *cluster) controller() int32 {
	c.t.Helper()
	id, err := c.zkv.controllerID()
	if err != nil || id < 0 {
		c.t.Fatalf("controller: id %d, %v", id, err)
	}
	return id
}

// metadata asks broker id alone for all topics' metadata.
func (c *cluster) metadata(id int32) (*kmsg.MetadataResponse, error) {
	cl := c.meta[id]
	if cl == nil {
		var err error
		cl, err = kgo.NewClient(kgo.SeedBrokers(c.broker(id).Addr()), kgo.DialTimeout(2*time.Second))
		if err != nil {
			return nil, fmt.Errorf("metadata client for broker %d: %w", id, err)
		}
		c.t.Cleanup(cl.Close)
		c.meta[id] = cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("metadata from broker %d: %w", id, err)
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// views asks each of ids for metadata.
func (c *cluster) views(ids []int32) (map[int32]clusterView, error) {
	out := map[int32]clusterView{}
	for _, id := range ids {
		resp, err := c.metadata(id)
		if err != nil {
			return nil, err
		}
		out[id] = viewOf(resp)
	}
	return out, nil
}

// agreedView returns the one view that all of live give, whose broker list
// is live and whose controller is /controller's, with check passing on it;
// else an error saying how they differ.
func (c *cluster) agreedView(live []int32, check func(clusterView) error) (clusterView, error) {
	views, err := c.views(live)
	if err != nil {
		return clusterView{}, err
	}
	first := views[live[0]]
	for _, id := range live[1:] {
		if views[id].String() != first.String() {
			return clusterView{}, fmt.Errorf("brokers disagree:\n broker %d: %s\n broker %d: %s", live[0], first, id, views[id])
		}
	}
	if !slices.Equal(first.BrokerIDs, live) {
		return clusterView{}, fmt.Errorf("metadata lists brokers %v, want %v", first.BrokerIDs, live)
	}
	ctrl, err := c.zkv.controllerID()
	if err != nil {
		return clusterView{}, err
	}
	if first.Controller != ctrl || ctrl < 0 {
		return clusterView{}, fmt.Errorf("metadata controller_id %d, /controller %d", first.Controller, ctrl)
	}
	if check != nil {
		if err := check(first); err != nil {
			return clusterView{}, fmt.Errorf("%w\nview: %s", err, first)
		}
	}
	return first, nil
}

// converge waits until live agree on a view that passes check, and returns it.
func (c *cluster) converge(live []int32, check func(clusterView) error) clusterView {
	c.t.Helper()
	var v clusterView
	testutil.Eventually(c.t, convergeTimeout, func() error {
		var err error
		v, err = c.agreedView(live, check)
		return err
	})
	return v
}

// healthy is a converge check: topic placed on brokers with full ISRs.
func healthy(topic string, partitions int, brokers []int32) func(clusterView) error {
	return func(v clusterView) error { return v.checkTopicHealthy(topic, partitions, 3, brokers, true) }
}

// createTopic creates topic through the admin API (routed to the
// controller) with rf 3 and configs.
func (c *cluster) createTopic(topic string, partitions int32, configs map[string]*string) {
	c.t.Helper()
	adm := kadm.NewClient(testutil.Client(c.t, c.bootstrap()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 3, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
}

// kill9 kills broker id with SIGKILL.
func (c *cluster) kill9(id int32) {
	c.t.Helper()
	c.resume(id)
	c.broker(id).Kill9()
}

// restart starts a stopped or killed broker again. After kill -9 its
// registration lingers until ZooKeeper expires the session; the broker
// would wait for that itself (TestBrokerKill9RestartAtOnce), but waiting
// here first keeps the restart in other tests a plain start.
func (c *cluster) restart(id int32) {
	c.t.Helper()
	p := c.broker(id)
	c.resume(id)
	if p.PID() != 0 {
		if err := p.Stop(); err != nil {
			c.t.Errorf("stop broker %d: %v", id, err)
		}
	}
	testutil.Eventually(c.t, 4*sessionTimeout, func() error {
		_, ok, err := c.zkv.registration(id)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("/brokers/ids/%d still registered", id)
		}
		return nil
	})
	p.Restart()
}

// pause stops broker id with SIGSTOP: alive for the kernel (its sockets
// accept), silent for everyone else.
func (c *cluster) pause(id int32) {
	c.t.Helper()
	pid := c.broker(id).PID()
	if pid == 0 {
		c.t.Fatalf("pause broker %d: not running", id)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		c.t.Fatalf("SIGSTOP broker %d (pid %d): %v", id, pid, err)
	}
	c.paused[id] = true
}

// resume sends SIGCONT to a paused broker.
func (c *cluster) resume(id int32) {
	if !c.paused[id] {
		return
	}
	delete(c.paused, id)
	if pid := c.brokers[id].PID(); pid != 0 {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			c.t.Errorf("SIGCONT broker %d (pid %d): %v", id, pid, err)
		}
	}
}

func (c *cluster) resumeAll() {
	for _, id := range slices.Sorted(maps.Keys(c.paused)) {
		c.resume(id)
	}
}

// keepLogs copies every process's log to $CLUSTER_KEEP_LOGS/<test>/ when
// that is set, since the temp dirs holding them go with the test.
func (c *cluster) keepLogs() {
	root := os.Getenv("CLUSTER_KEEP_LOGS")
	if root == "" {
		return
	}
	dir := filepath.Join(root, strings.ReplaceAll(c.t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Logf("keep logs: %v", err)
		return
	}
	logs := map[string]string{"zookeeper.log": c.zk.LogPath()}
	for id, p := range c.brokers {
		logs[fmt.Sprintf("broker-%d.log", id)] = p.LogPath()
	}
	for name, src := range logs {
		data, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		if err != nil {
			c.t.Logf("keep logs: %v", err)
		}
	}
	c.t.Logf("logs kept in %s", dir)
}
