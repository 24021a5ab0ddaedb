package interop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/internal/workload"
)

const (
	txnStateTopic = "__transaction_state"
	// mixedTxnTopic is what the transactional producers write: one
	// partition led by each broker, so that every transaction spans
	// leaders of both kinds.
	mixedTxnTopic = "mixed-txn"
)

// mixedTxns are transactional producers in a mixed cluster: one whose
// transaction coordinator is a Kafka-led __transaction_state partition
// and one whose coordinator is Brook-led, each writing transactions over
// partitions led by Kafka and by Brook (so that each kind's coordinator
// sends WriteTxnMarkers to the other kind's leaders), committing or
// aborting at random; a read_committed reader reads throughout.
type mixedTxns struct {
	c         *mixedCluster
	ids       []string // transactional ids; ids[0] is Kafka-coordinated, ids[1] Brook's
	producers *workload.TxnProducers
	reader    *workload.Reader
	partition []int32 // the __transaction_state partition of each id
}

// startMixedTxns creates mixedTxnTopic with assignment and
// __transaction_state (statePartitions partitions), then reorders the
// replicas of two __transaction_state partitions and elects their
// preferred leaders: one led by Kafka broker kafka with Brook broker brook
// next, one led by brook with kafka next. A kill -9 of kafka then moves
// the first coordinator to Brook, one of brook moves the second to Kafka,
// whichever kind the controller is. It starts the producers and the
// reader.
func startMixedTxns(c *mixedCluster, assignment [][]int32, statePartitions int32, kafka, brook int32) *mixedTxns {
	t := c.t
	t.Helper()
	c.createTopic(mixedTxnTopic, assignment)
	c.waitInSync(mixedTxnTopic, len(assignment))
	// The first FindCoordinator of a transactional id creates
	// __transaction_state.
	testutil.Eventually(t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.adm.FindTxnCoordinators(ctx, "probe").Error()
	})
	c.waitInSync(txnStateTopic, int(statePartitions))
	m := &mixedTxns{c: c, partition: []int32{0, 1}}
	var others []int32
	for _, id := range c.ids() {
		if id != kafka && id != brook {
			others = append(others, id)
		}
	}
	order := [][]int32{append([]int32{kafka, brook}, others...), append([]int32{brook, kafka}, others...)}
	for i, p := range m.partition {
		m.ids = append(m.ids, groupOn(fmt.Sprintf("txn-led-by-%d", order[i][0]), p, statePartitions))
	}
	c.reassign(txnStateTopic, map[int32][]int32{m.partition[0]: order[0], m.partition[1]: order[1]})
	m.electPreferred()
	m.waitCoordinators(order[0][0], order[1][0])
	m.producers = workload.NewTxnProducers(c.bootstrap(), mixedTxnTopic, int32(len(assignment)), m.ids, uint64(time.Now().UnixNano()))
	m.reader = workload.StartReader(t, c.bootstrap(), mixedTxnTopic, int32(len(assignment)))
	m.producers.Start(t)
	// Before any fault, no transaction may fail: a healthy mixed cluster
	// commits and aborts whatever its producers ask for.
	testutil.Eventually(t, mixedConverge, func() error {
		if n := len(m.producers.Log.Snapshot()); n < mixedHealthyTxns {
			return fmt.Errorf("%d transactions begun, want %d before any fault", n, mixedHealthyTxns)
		}
		return nil
	})
	if errs := m.producers.Log.Errors(); len(errs) > 0 {
		t.Errorf("transactions failed in a healthy mixed cluster: %v", errs)
	}
	return m
}

// mixedHealthyTxns is how many transactions the producers run before the
// first fault, none of which may fail.
const mixedHealthyTxns = 20

// reassign sets the replicas (their order: the first is the preferred
// leader) of topic's partitions and waits until the reassignment is done.
func (c *mixedCluster) reassign(topic string, replicas map[int32][]int32) {
	c.t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	for p, rs := range replicas {
		req.Assign(topic, p, rs)
	}
	testutil.Eventually(c.t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := c.adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return err
		}
		return resp.Error()
	})
	testutil.Eventually(c.t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := c.adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		for p, rs := range replicas {
			if got := m.Topics[topic].Partitions[p].Replicas; !slices.Equal(got, rs) {
				return fmt.Errorf("%s-%d: replicas %v, want %v", topic, p, got, rs)
			}
		}
		return nil
	})
}

// electPreferred moves the leadership of every __transaction_state and
// mixedTxnTopic partition back to its preferred leader: the coordinators
// a kill moved to the other kind move back while the producers run.
func (m *mixedTxns) electPreferred() {
	m.c.t.Helper()
	set := kadm.TopicsSet{}
	for _, topic := range []string{txnStateTopic, mixedTxnTopic} {
		view, err := m.c.partitions(topic)
		if err != nil {
			m.c.t.Fatalf("elect preferred leaders: %v", err)
		}
		for p := range view {
			set.Add(topic, p)
		}
	}
	testutil.Eventually(m.c.t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := m.c.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		if err != nil {
			return err
		}
		var errs []string
		for _, ps := range resp {
			for _, r := range ps {
				// ELECTION_NOT_NEEDED: already led by its preferred leader.
				if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
					errs = append(errs, fmt.Sprintf("%s-%d: %v", r.Topic, r.Partition, r.Err))
				}
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("elect preferred leaders: %s", strings.Join(errs, "; "))
		}
		return nil
	})
}

// waitCoordinators waits until FindCoordinator names want[i] for ids[i].
func (m *mixedTxns) waitCoordinators(want ...int32) {
	m.c.t.Helper()
	testutil.Eventually(m.c.t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resps := m.c.adm.FindTxnCoordinators(ctx, m.ids...)
		for i, id := range m.ids {
			r, ok := resps[id]
			if !ok || r.Err != nil || r.NodeID != want[i] {
				return fmt.Errorf("transactional id %s: coordinator %d (error %v), want %d", id, r.NodeID, r.Err, want[i])
			}
		}
		return nil
	})
	m.c.t.Logf("transaction coordinators: %s on %v, %s on %v", m.ids[0], m.c.node(want[0]), m.ids[1], m.c.node(want[1]))
}

// waitCommitSince waits until a transaction was committed after since.
func (m *mixedTxns) waitCommitSince(since time.Time) {
	m.c.t.Helper()
	testutil.Eventually(m.c.t, mixedConverge, func() error {
		if last := m.producers.Log.LastCommitAt(); !last.After(since) {
			return fmt.Errorf("no transaction committed since %s; errors %v", since.Format(time.TimeOnly), m.producers.Log.Errors())
		}
		return nil
	})
}

// verify stops the producers, waits until no transaction is left open
// (every partition's last stable offset at its high watermark), and
// checks with workload.VerifyTxn the final read_committed log and what
// the reader saw: every committed transaction read whole exactly once,
// nothing of an aborted one, one of unknown outcome whole or not at all.
func (m *mixedTxns) verify(partitions int32) {
	t := m.c.t
	t.Helper()
	m.producers.Stop()
	workload.WaitStable(t, m.c.adm, mixedTxnTopic, mixedConverge)
	m.reader.Stop()
	for _, ch := range m.reader.Changed() {
		t.Errorf("the read_committed reader saw a record change: %s", ch)
	}
	final := workload.ReadFinal(t, m.c.bootstrap(), mixedTxnTopic, partitions, mixedConverge)
	txns := m.producers.Log.Snapshot()
	rep, violations := workload.VerifyTxn(mixedTxnTopic, txns, final, m.reader.Seen())
	workload.ReportViolations(t, violations)
	t.Logf("transactions across kinds checked: %d transactions, %d committed, %d aborted, %d of unknown outcome (%d visible); final read_committed log %d records, reader read %d; producer errors %v",
		len(txns), rep.Committed, rep.Aborted, rep.Unknown, rep.UnknownSeen, rep.Final, rep.ReadDuringRun, m.producers.Log.Errors())
	if rep.Committed == 0 || rep.Aborted == 0 {
		t.Errorf("%d transactions committed and %d aborted: the test checked too little", rep.Committed, rep.Aborted)
	}
}
