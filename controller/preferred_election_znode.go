package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/controller/store"
)

// /admin/preferred_replica_election, the ZooKeeper way to ask for
// preferred leader elections: kafka-preferred-replica-election.sh (removed
// in Kafka 3.0) and Kafka's AdminZkClient write
// {"version":1,"partitions":[{"topic":"t","partition":0}]} there; Kafka
// 3.9's kafka-leader-election.sh uses the ElectLeaders API instead (elect.go).
// The controller watches the znode's existence, runs a preferred election
// for the partitions it names when it appears (and on taking over, for one
// left by a controller that died before finishing), then deletes it fenced
// by the controller epoch, so the next request can be written (Kafka's
// processReplicaLeaderElection with ZkTriggered and
// removePartitionsFromPreferredReplicaElection).

// PreferredReplicaElectionPath is the znode of ZooKeeper-triggered
// preferred leader elections.
const PreferredReplicaElectionPath = "/admin/preferred_replica_election"

// processZkPreferredElection arms the existence watch on the znode if none
// is outstanding and, if the znode exists, runs its elections and deletes it.
func (c *Controller) processZkPreferredElection(ctx context.Context) error {
	var ok bool
	var err error
	if c.prefElectArmed {
		ok, _, err = c.st.Exists(ctx, PreferredReplicaElectionPath)
	} else {
		var ch <-chan store.Event
		ok, _, ch, err = c.st.ExistsW(ctx, PreferredReplicaElectionPath)
		if err == nil {
			c.prefElectArmed = true
			c.forward(ctx, ch, func(p *pendingEvents) { p.zkPreferredElection = true })
		}
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", PreferredReplicaElectionPath, err)
	}
	if !ok {
		return nil
	}
	data, _, err := c.st.Get(ctx, PreferredReplicaElectionPath)
	if errors.Is(err, store.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", PreferredReplicaElectionPath, err)
	}
	tps, derr := decodePartitionList(data)
	if derr != nil {
		// Kafka's decode yields no partitions for an unreadable body, and
		// the znode is deleted all the same.
		c.log.Warn("ignoring unreadable preferred replica election request", "err", derr)
	}
	if len(tps) > 0 {
		results, acts := c.state.OnElectLeaders(ElectPreferred, tps)
		if err := c.execute(ctx, acts); err != nil {
			return err
		}
		failed := 0
		for _, r := range results {
			if r.ErrorCode != 0 && r.ErrorCode != kerr.ElectionNotNeeded.Code {
				failed++
			}
		}
		c.log.Info("preferred replica election requested through ZooKeeper", "partitions", len(tps), "not_elected", failed)
	}
	return c.deleteFenced(ctx, PreferredReplicaElectionPath)
}
