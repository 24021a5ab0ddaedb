package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestUncleanElectionTopicOverride runs brokers whose static
// unclean.leader.election.enable is true, with the cluster-wide dynamic
// default (kafka-configs --entity-type brokers --entity-default) set to
// false, and two topics, each with one partition on brokers x and y (not
// the controller): "guarded" overrides the config to false, "defaulted"
// has no override. y stops, so the ISR shrinks to the leader x; records
// are acknowledged (acks=all) on x alone; x is killed. When y returns out
// of sync, neither partition may elect it: the topic, or else the dynamic
// default, forbids it, and electing it would lose the acknowledged records
// (Brook once read only the static broker value). Then "defaulted" gets
// the override true: its partition elects y at once, as Kafka's controller
// does on such a config change (the topic override beats the default).
// "guarded" stays offline until x returns, with every acknowledged record.
func TestUncleanElectionTopicOverride(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"unclean.leader.election.enable": "true"})
	ctrl := c.controller()
	others := c.others(ctrl)
	x, y := others[0], others[1]
	const rescued, guarded = "unclean-defaulted", "unclean-guarded"
	topics := []string{rescued, guarded}
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alterResp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kadm.StringPtr("false")}})
	if err == nil {
		for _, r := range alterResp {
			err = cmp.Or(err, r.Err)
		}
	}
	if err != nil {
		t.Fatalf("set the cluster-wide default: %v", err)
	}
	c.createAssigned(guarded, map[int32][]int32{0: {x, y}}, map[string]string{"unclean.leader.election.enable": "false"})
	c.createAssigned(rescued, map[int32][]int32{0: {x, y}}, nil)
	waitState := func(what string, cond func(zkPartitionState) error) {
		t.Helper()
		for _, topic := range topics {
			testutil.Eventually(t, convergeTimeout, func() error {
				st, err := c.zkv.partitionState(topic, 0)
				if err != nil {
					return err
				}
				if err := cond(st); err != nil {
					return fmt.Errorf("%s-0 %s: %w (state %+v)", topic, what, err, st)
				}
				return nil
			})
		}
	}
	waitState("started", func(st zkPartitionState) error {
		if st.Leader != x || !slices.Equal(sortedIDs(st.ISR), sortedIDs([]int32{x, y})) {
			return fmt.Errorf("want leader %d, ISR [%d %d]", x, x, y)
		}
		return nil
	})

	// y goes: the ISR shrinks to x, which alone holds what is acknowledged now.
	if err := c.broker(y).Stop(); err != nil {
		t.Fatalf("stop broker %d: %v", y, err)
	}
	waitState("ISR shrunk", func(st zkPartitionState) error {
		if !slices.Equal(st.ISR, []int32{x}) {
			return fmt.Errorf("want ISR [%d]", x)
		}
		return nil
	})
	const acked = 10
	cl := producer(t, c.bootstrap())
	for _, topic := range topics {
		if err := produceSeqs(ctx, cl, topic, 1, 0, acked); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	c.kill9(x)
	waitState("offline", func(st zkPartitionState) error {
		if st.Leader != -1 {
			return fmt.Errorf("want no leader")
		}
		return nil
	})
	// y returns out of sync. Once both live brokers' metadata lists it,
	// the controller has decided on its return (it writes partition states
	// before it sends metadata).
	c.restart(y)
	c.converge([]int32{ctrl, y}, nil)
	for _, topic := range topics {
		st, err := c.zkv.partitionState(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader != -1 {
			t.Fatalf("%s-0: out-of-sync replica %d elected though the topic config or the dynamic default forbids unclean election (state %+v)", topic, st.Leader, st)
		}
	}

	// One topic's override turns true: y leads it at once.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}, rescued)
	if err == nil {
		_, err = resp.On(rescued, nil)
	}
	if err != nil {
		t.Fatalf("alter %s: %v", rescued, err)
	}
	testutil.Eventually(t, convergeTimeout, func() error {
		st, err := c.zkv.partitionState(rescued, 0)
		if err != nil {
			return err
		}
		if st.Leader != y || !slices.Equal(st.ISR, []int32{y}) {
			return fmt.Errorf("%s-0: state %+v, want leader %d, ISR [%d] after the config change", rescued, st, y, y)
		}
		return nil
	})
	if st, err := c.zkv.partitionState(guarded, 0); err != nil || st.Leader != -1 {
		t.Fatalf("%s-0: state %+v, %v; want it still without a leader", guarded, st, err)
	}

	// x returns: the guarded partition elects it cleanly, records intact.
	c.restart(x)
	testutil.Eventually(t, convergeTimeout, func() error {
		st, err := c.zkv.partitionState(guarded, 0)
		if err != nil {
			return err
		}
		if st.Leader != x {
			return fmt.Errorf("%s-0: state %+v, want leader %d", guarded, st, x)
		}
		return nil
	})
	got := consumeSeqs(t, c.bootstrap(), guarded, 1, acked, 30*time.Second)
	checkSeqs(t, guarded, got, 1, acked)
}

// createAssigned creates topic with an explicit replica assignment and
// config overrides through the controller.
func (c *cluster) createAssigned(topic string, assignment map[int32][]int32, configs map[string]string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, testutil.Client(c.t, c.bootstrap()))
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
}
