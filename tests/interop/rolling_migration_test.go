package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/brook-mq/brook/internal/testutil"

	"github.com/brook-mq/brook/internal/workload"
)

// TestRollingMigration: three Kafka 3.9 brokers in ZooKeeper mode under an
// idempotent acks=all producer, a reader and a consumer group. Each broker
// in turn gets a controlled shutdown (SIGTERM) and is started as Brook on
// the same broker.id, log dir, port and ZooKeeper, and the next waits
// until every partition's ISR is whole again; once the cluster is all
// Brook it is rolled back to Kafka 3.9 the same way. Going forward the
// last Kafka broker is first killed with kill -9 while the others are
// Brook, restarted, then rolled; with $INTEROP_FULL (make interop) the
// last Brook broker too on the way back, while the others are Kafka. The
// checkers of
// tests/cluster's chaos tests decide across the whole run: no
// acknowledged record lost, no duplicate, no committed offset going back
// or lost.
func TestRollingMigration(t *testing.T) {
	const (
		topic             = "rolling"
		offsetsPartitions = 3
	)
	// Each broker is the preferred leader of one partition.
	assignment := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	partitions := int32(len(assignment))

	start := time.Now()
	c := startMixedCluster(t, []bool{true, true, true}, offsetsPartitions)
	c.createTopic(topic, assignment)
	c.waitInSync(topic, len(assignment))

	w := workload.StartWriter(t, c.bootstrap(), topic, partitions)
	r := workload.StartReader(t, c.bootstrap(), topic, partitions)
	const group = "rolling-group"
	m := workload.StartMembers(t, c.bootstrap(), group, topic, 2)
	c.waitInSync(offsetsTopic, offsetsPartitions)
	w.WaitAcked(t, 50, mixedConverge)

	// Forward to Brook, then back to Kafka. After the first broker of a
	// pass, the controller is moved to a broker of the new kind, as an
	// operator may (delete /controller): so the old kind's controlled
	// shutdowns are served by the new kind's controller, a Kafka broker's
	// ControlledShutdown by a Brook controller and the reverse.
	order := []int32{1, 2, 3}
	full := os.Getenv("INTEROP_FULL") != ""
	for _, toKafka := range []bool{false, true} {
		for i, id := range order {
			if i == len(order)-1 && (!toKafka || full) {
				// The last broker of the old kind crashes while the others
				// already run the new kind (a Kafka broker among Brook ones;
				// with $INTEROP_FULL, make interop, also a Brook among Kafka
				// ones on the way back), is restarted as it was, and then
				// rolled.
				c.crashAndRestart(id, topic, len(assignment), offsetsPartitions, w)
			}
			c.roll(id, toKafka)
			if i == 0 {
				c.moveController(toKafka)
			}
			c.waitInSync(topic, len(assignment))
			c.waitInSync(offsetsTopic, offsetsPartitions)
			w.WaitAcked(t, w.Acked()+20, mixedConverge)
			t.Logf("(%v) %v up, every replica in sync; controller %d", time.Since(start).Round(time.Second), c.node(id), c.controller())
		}
	}

	waitCommitSince(t, group, m, time.Now())
	rep := c.verifyRun(topic, partitions, w, r, map[string]*workload.Members{group: m})
	t.Logf("rolling migration checked in %v: %d produced, %d acknowledged, %d failed, %d skipped, %d in the final log, %d read during the run; producer errors (retried) %v",
		time.Since(start).Round(time.Second), rep.Produced, rep.Acked, rep.Failed, rep.Skipped, rep.Final, rep.ReadDuringRun, w.Errors())
}

// roll stops broker id with SIGTERM (a controlled shutdown, for Kafka as
// for Brook), waits until the cluster has dropped it (its ZooKeeper
// session closed, /brokers/ids/<id> gone), and starts it as the other
// kind on the same id, log dir, port and ZooKeeper.
func (c *mixedCluster) roll(id int32, kafka bool) {
	c.t.Helper()
	n := c.node(id)
	was := n.String()
	begin := time.Now()
	if err := n.proc.Stop(); err != nil {
		c.t.Fatalf("controlled shutdown of %s: %v\n--- log tail ---\n%s", was, err, n.proc.LogTail(40))
	}
	// Stop succeeds after an unclean shutdown too: the broker's log says
	// whether the controller let it go.
	done := "controlled shutdown complete"
	if n.kafka {
		done = "Controlled shutdown request returned successfully"
	}
	log, err := os.ReadFile(n.proc.LogPath())
	if err != nil || !bytes.Contains(log, []byte(done)) {
		c.t.Errorf("%s stopped without a controlled shutdown (its log lacks %q; read error %v)\n--- log tail ---\n%s", was, done, err, n.proc.LogTail(40))
	}
	// Brook opened a dir the other kind wrote and stopped cleanly: it must
	// have read every file there as Kafka would, none as corrupt.
	if !n.kafka {
		for _, line := range bytes.Split(log, []byte("\n")) {
			if bytes.Contains(line, []byte("unreadable")) || bytes.Contains(line, []byte("corrupt")) {
				c.t.Errorf("%s found a file of the log dir unreadable: %s", was, line)
			}
		}
	}
	stopped := time.Since(begin)
	c.down = id
	c.waitBrokers(c.live())
	dropped := time.Since(begin)
	n.kafka = kafka
	c.startNode(n)
	c.down = 0
	c.waitBrokers(c.ids())
	c.t.Logf("%s stopped in %v, dropped from the metadata after %v; %v started on its log dir, registered after %v",
		was, stopped.Round(100*time.Millisecond), dropped.Round(100*time.Millisecond), n, time.Since(begin).Round(100*time.Millisecond))
}

// moveController makes a broker of the given kind (true: Kafka) the
// controller: while another holds /controller, it deletes the znode, and
// the live brokers elect again (the first to create it wins).
func (c *mixedCluster) moveController(kafka bool) {
	c.t.Helper()
	conn, _, err := zk.Connect([]string{c.zk.Connect()}, 10*time.Second,
		zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		c.t.Fatalf("connect to zookeeper: %v", err)
	}
	defer conn.Close()
	var id int32
	testutil.Eventually(c.t, mixedConverge, func() error {
		data, st, err := conn.Get("/controller")
		if errors.Is(err, zk.ErrNoNode) {
			return errors.New("no controller elected yet")
		}
		if err != nil {
			return fmt.Errorf("read /controller: %w", err)
		}
		var ctrl struct {
			BrokerID int32 `json:"brokerid"`
		}
		if err := json.Unmarshal(data, &ctrl); err != nil {
			return fmt.Errorf("decode /controller %q: %w", data, err)
		}
		if ctrl.BrokerID >= 1 && int(ctrl.BrokerID) <= len(c.nodes) && c.node(ctrl.BrokerID).kafka == kafka {
			id = ctrl.BrokerID
			return nil
		}
		if err := conn.Delete("/controller", st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("delete /controller: %w", err)
		}
		return fmt.Errorf("controller was broker %d; /controller deleted for another election", ctrl.BrokerID)
	})
	// Every broker learns the new controller from its UpdateMetadata.
	testutil.Eventually(c.t, mixedConverge, func() error {
		for _, b := range c.ids() {
			if _, ctrl, err := c.describe(context.Background(), b); err != nil || ctrl != id {
				return fmt.Errorf("broker %d shows controller %d (error %v), want %d", b, ctrl, err, id)
			}
		}
		return nil
	})
	c.t.Logf("controller moved to %v", c.node(id))
}

// crashAndRestart kills broker id with kill -9 under load, waits until the
// producer had more records acknowledged by the survivors, restarts it as
// the same kind on its dir, and waits until every ISR is whole again.
func (c *mixedCluster) crashAndRestart(id int32, topic string, partitions, offsetsPartitions int, w *workload.Writer) {
	c.t.Helper()
	n := c.node(id)
	begin := time.Now()
	ctrl := c.controller()
	c.kill9(id)
	w.WaitAcked(c.t, w.Acked()+20, mixedConverge)
	c.restartAfterCrash(n)
	c.waitInSync(topic, partitions)
	c.waitInSync(offsetsTopic, offsetsPartitions)
	c.t.Logf("kill -9 of %v mid-roll (controller was %d): restarted, every replica in sync after %v", n, ctrl, time.Since(begin).Round(100*time.Millisecond))
}
