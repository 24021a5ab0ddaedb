package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/controller/zkstore"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestControllerOverZooKeeper runs the controller path on a real ZooKeeper
// (chroot /brook): two brokers each with a controller, a replicated topic,
// then the active controller's broker dies and the other takes over,
// re-electing leaders.
func TestControllerOverZooKeeper(t *testing.T) {
	zk := testutil.StartZooKeeper(t)
	ctx := context.Background()
	dial := func() *zkstore.Store {
		s, err := zkstore.Dial(ctx, zkstore.Options{Connect: zk.Connect() + "/brook", SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	type node struct {
		s    *zkstore.Store
		c    *Controller
		f    *fakeSender
		done chan error
	}
	nodes := map[int32]*node{}
	for _, id := range []int32{1, 2} {
		n := &node{s: dial(), f: newFakeSender(), done: make(chan error, 1)}
		if _, err := RegisterBroker(ctx, n.s, plaintext(id)); err != nil {
			t.Fatal(err)
		}
		n.c = New(Config{BrokerID: id, DeleteTopicEnable: true}, n.s, n.f)
		rctx, cancel := context.WithCancel(ctx)
		go func() { n.done <- n.c.Run(rctx) }()
		t.Cleanup(func() {
			cancel()
			<-n.done
		})
		nodes[id] = n
	}
	eventually(t, "one active controller", nodes[1].f, func() bool {
		return nodes[1].c.IsActive() != nodes[2].c.IsActive() && nodes[1].c.ActiveID() == nodes[2].c.ActiveID() && nodes[1].c.ActiveID() > 0
	})
	activeID := nodes[1].c.ActiveID()
	active, standby := nodes[activeID], nodes[3-activeID]

	clusterID, err := EnsureClusterID(ctx, standby.s)
	if err != nil || len(clusterID) != 22 {
		t.Fatalf("cluster id %q %v", clusterID, err)
	}
	// The active broker leads the partition, so its death forces an election.
	res := CreateTopics(ctx, standby.s, []TopicSpec{{Name: "z", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {activeID, 3 - activeID}}}}, false)
	if res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	standbyID := 3 - activeID
	active.f.waitFor(t, "LeaderAndISR to both brokers", func(s []sentReq) bool {
		return hasLeaderAndISR(s, activeID, "z", 1) && hasLeaderAndISR(s, standbyID, "z", 1)
	})

	// The active broker's session ends: its registration and /controller go.
	active.s.Close()
	select {
	case err := <-active.done:
		if !errors.Is(err, store.ErrSessionExpired) {
			t.Fatalf("Run of the dead controller returned %v", err)
		}
		active.done <- err
	case <-time.After(20 * time.Second):
		t.Fatal("Run of the dead controller did not return")
	}
	eventually(t, "failover", standby.f, standby.c.IsActive)
	standby.f.waitFor(t, "LeaderAndISR electing the survivor", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.LeaderAndISRRequest](s, standbyID)
		if !ok || r.ControllerEpoch != 2 || len(r.TopicStates) != 1 {
			return false
		}
		p := r.TopicStates[0].PartitionStates[0]
		return p.Leader == standbyID && p.LeaderEpoch == 1 && len(p.ISR) == 1 && p.ISR[0] == standbyID
	})
	d, _, err := standby.s.Get(ctx, ControllerEpochPath)
	if err != nil || string(d) != "2" {
		t.Fatalf("controller epoch %q %v", d, err)
	}
	d, _, err = standby.s.Get(ctx, PartitionStatePath("z", 0))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := decodePartitionState(d, store.Stat{})
	if err != nil || ps.Leader != standbyID || ps.ControllerEpoch != 2 || ps.LeaderEpoch != 1 {
		t.Fatalf("state %s %v", d, err)
	}

	// Deletion over ZooKeeper, through the new controller. As in Kafka it
	// waits for the dead replica's broker, and completes once it is back.
	if r := DeleteTopics(ctx, standby.s, []string{"z"}); r[0].ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	standby.f.waitFor(t, "StopReplica to the live replica", func(s []sentReq) bool {
		_, ok := lastOf[*kmsg.StopReplicaRequest](s, standbyID)
		return ok
	})
	if ok, _, _ := standby.s.Exists(ctx, TopicPath("z")); !ok {
		t.Fatal("topic deleted while a replica was offline")
	}
	if _, err := RegisterBroker(ctx, dial(), plaintext(activeID)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "topic deleted", standby.f, func() bool {
		ok, _, err := standby.s.Exists(ctx, TopicPath("z"))
		return err == nil && !ok
	})
	if start, end, err := NextProducerIDBlock(ctx, standby.s, standbyID, ProducerIDBlockSize); err != nil || start != 0 || end != 999 {
		t.Fatalf("producer ids %d-%d %v", start, end, err)
	}
}
