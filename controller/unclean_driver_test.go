package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerUncleanPerTopicAndConfigChange drives the controller over
// the embedded store: with the static broker value true and the topic's
// override false, the partition stays offline when its last ISR member
// dies (Brook once elected the out-of-sync replica, losing acknowledged
// records); setting the override to true then elects it, as Kafka's
// controller does on a topic config change; likewise the cluster-wide
// dynamic default for a topic without an override.
func TestControllerUncleanPerTopicAndConfigChange(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{UncleanLeaderElection: true})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	others := registerBrokers(t, db, 2, 3)
	eventually(t, "controller active", f, rc.c.IsActive)
	res := CreateTopics(ctx, rc.sess, []TopicSpec{
		{Name: "u", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {2, 3}}, Configs: map[string]string{UncleanLeaderElectionConfig: "false"}},
	}, false)
	if res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	state := func() PartitionState {
		data, stat, err := rc.sess.Get(ctx, PartitionStatePath("u", 0))
		if err != nil {
			return PartitionState{LeaderEpoch: -1}
		}
		ps, err := decodePartitionState(data, stat)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	eventually(t, "u-0 started", f, func() bool { return state().Leader == 2 })

	// Broker 3 dies: the ISR shrinks to the leader 2. It comes back out of sync.
	others[3].Close()
	eventually(t, "ISR shrunk to [2]", f, func() bool { st := state(); return st.LeaderEpoch == 1 && len(st.ISR) == 1 })
	others[3] = db.NewSession()
	if _, err := RegisterBroker(ctx, others[3], plaintext(3)); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "UpdateMetadata with broker 3 back", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1)
		return ok && len(r.LiveBrokers) == 3
	})

	// The leader dies: the topic forbids unclean election, whatever the broker says.
	others[2].Close()
	eventually(t, "leader 2 gone", f, func() bool { return state().LeaderEpoch == 2 })
	if st := state(); st.Leader != NoLeader {
		t.Fatalf("out-of-sync replica elected although the topic forbids it: %+v", st)
	}

	// The topic now allows it: broker 3 leads.
	if err := SetTopicConfig(ctx, rc.sess, "u", map[string]string{UncleanLeaderElectionConfig: "true"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "unclean election after the config change", f, func() bool { st := state(); return st.Leader == 3 && st.LeaderEpoch == 3 })

	// A topic without override follows the cluster-wide dynamic default over the static true.
	if err := SetEntityConfig(ctx, rc.sess, EntityBrokers, DefaultBroker, map[string]string{UncleanLeaderElectionConfig: "false"}); err != nil {
		t.Fatal(err)
	}
	if err := SetTopicConfig(ctx, rc.sess, "u", map[string]string{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "controller saw the default change", f, func() bool {
		done := make(chan bool, 1)
		if err := rc.c.call(ctx, func(_ context.Context, active bool) {
			done <- active && !rc.c.state.UncleanDefault && rc.c.state.Topics["u"].UncleanOverride == nil
		}); err != nil {
			t.Fatal(err)
		}
		return <-done
	})
	others[2] = db.NewSession() // 2 comes back out of sync; 3, the only ISR member, dies
	if _, err := RegisterBroker(ctx, others[2], plaintext(2)); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "UpdateMetadata with broker 2 back", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1)
		return ok && len(r.LiveBrokers) == 3
	})
	others[3].Close()
	eventually(t, "leader 3 gone", f, func() bool { return state().LeaderEpoch == 4 })
	if st := state(); st.Leader != NoLeader {
		t.Fatalf("unclean election although the dynamic default forbids it: %+v", st)
	}
	if err := SetEntityConfig(ctx, rc.sess, EntityBrokers, DefaultBroker, map[string]string{UncleanLeaderElectionConfig: "true"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "unclean election after the default changed", f, func() bool { st := state(); return st.Leader == 2 && st.LeaderEpoch == 5 })
}
