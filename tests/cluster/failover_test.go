package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestControllerKill9 kills the controller with SIGKILL: once its session
// expires another broker must win /controller with a higher controller
// epoch, every survivor must name it in Metadata, the dead broker's
// partitions must get leaders from their ISR, and the restarted broker
// must rejoin without taking the controller back.
//
// As in Kafka (its replica state machine moves replicas of dead brokers to
// OfflineReplica when a controller starts), the new controller takes the
// dead broker out of the ISRs it followed in, too. The leaders' own ISR
// shrink after replica.lag.time.max.ms would hide a controller that does
// not, so that is set beyond convergeTimeout here.
func TestControllerKill9(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "120000"})
	const topic, partitions = "ctrl-failover", 6
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	old := before.Controller
	epoch, err := c.zkv.controllerEpoch()
	if err != nil {
		t.Fatal(err)
	}

	c.kill9(old)
	live := c.others(old)
	after := c.converge(live, func(v clusterView) error {
		if v.Controller == old {
			return fmt.Errorf("controller is still the killed broker %d", old)
		}
		return checkFailedOver(v, before, topic, old, live)
	})
	newEpoch, err := c.zkv.controllerEpoch()
	if err != nil {
		t.Fatal(err)
	}
	if newEpoch <= epoch {
		t.Errorf("/controller_epoch %d after failover, was %d: want it bumped", newEpoch, epoch)
	}
	t.Logf("controller %d -> %d, epoch %d -> %d; metadata: %s", old, after.Controller, epoch, newEpoch, after)

	c.restart(old)
	back := c.converge(c.ids, func(v clusterView) error {
		return v.checkTopicHealthy(topic, partitions, 3, c.ids, false)
	})
	if back.Controller != after.Controller {
		t.Errorf("controller moved from %d to %d when broker %d came back", after.Controller, back.Controller, old)
	}
}

// checkFailedOver checks view v, taken after broker dead failed, against
// the view before: dead is gone from every ISR, each partition it led has
// a new leader from its old ISR with a higher leader epoch, and the other
// partitions kept their leader.
func checkFailedOver(v, before clusterView, topic string, dead int32, live []int32) error {
	if err := v.checkTopicHealthy(topic, len(before.topicPartitions(topic)), 3, live, false); err != nil {
		return err
	}
	for _, p := range before.topicPartitions(topic) {
		was, now := before.Partitions[p], v.Partitions[p]
		if slices.Contains(now.ISR, dead) {
			return fmt.Errorf("%s: ISR %v still holds dead broker %d", p, now.ISR, dead)
		}
		if was.Leader != dead {
			if now.Leader != was.Leader {
				return fmt.Errorf("%s: leader moved %d -> %d though broker %d, not its leader, failed", p, was.Leader, now.Leader, dead)
			}
			continue
		}
		if !slices.Contains(was.ISR, now.Leader) || now.Leader == dead {
			return fmt.Errorf("%s: new leader %d is not from the old ISR %v minus %d", p, now.Leader, was.ISR, dead)
		}
		if now.LeaderEpoch <= was.LeaderEpoch {
			return fmt.Errorf("%s: leader epoch %d after the election, was %d", p, now.LeaderEpoch, was.LeaderEpoch)
		}
	}
	return nil
}

// leaderVictim picks a broker that leads partitions of topic but is not the
// controller, so that a test of leader failover is not also one of
// controller failover.
func leaderVictim(t *testing.T, v clusterView, topic string) int32 {
	t.Helper()
	for _, p := range v.topicPartitions(topic) {
		if l := v.Partitions[p].Leader; l != v.Controller {
			return l
		}
	}
	t.Fatalf("every partition of %s is led by the controller: %s", topic, v)
	return -1
}

// TestLeaderKill9Elections kills a leader that is not the controller: each
// partition it led gets a new leader from its ISR, and a producer (acks=1,
// since leadership is the point here) writes to every partition again.
func TestLeaderKill9Elections(t *testing.T) {
	c := startCluster(t, 3, nil)
	const topic, partitions = "leader-failover", 6
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	victim := leaderVictim(t, before, topic)
	led := before.ledBy(topic, victim)

	c.kill9(victim)
	live := c.others(victim)
	after := c.converge(live, func(v clusterView) error { return checkFailedOver(v, before, topic, victim, live) })
	t.Logf("killed broker %d, leader of %v; now: %s", victim, led, after)

	cl := producer(t, c.bootstrap(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := produceSeqs(ctx, cl, topic, partitions, 0, 10); err != nil {
		t.Fatalf("produce after the leader died: %v", err)
	}
	c.restart(victim)
	c.converge(c.ids, func(v clusterView) error { return v.checkTopicHealthy(topic, partitions, 3, c.ids, false) })
}

// TestLeaderKill9ClientsCarryOn is the data side of leader failover: what
// an idempotent acks=all producer wrote before a leader died is all still
// there, it keeps writing through the new leaders, a consumer reading
// throughout sees every record once and in order, and the ISR is whole
// again once the broker is back. It needs replication (followers fetching).
func TestLeaderKill9ClientsCarryOn(t *testing.T) {
	c := startCluster(t, 3, nil)
	const topic, partitions, batch = "clients-carry-on", 6, 200
	minISR := "2"
	c.createTopic(topic, partitions, map[string]*string{"min.insync.replicas": &minISR})
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))

	cl := producer(t, c.bootstrap())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	consumer := startSeqConsumer(t, c.bootstrap(), topic, partitions)
	if err := produceSeqs(ctx, cl, topic, partitions, 0, batch); err != nil {
		t.Fatalf("produce before the failure: %v", err)
	}
	consumer.waitFor(t, partitions, batch, time.Minute)

	victim := leaderVictim(t, before, topic)
	c.kill9(victim)
	live := c.others(victim)
	// The producer and the consumer find the new leaders by themselves;
	// min.insync.replicas=2 still holds with two brokers.
	if err := produceSeqs(ctx, cl, topic, partitions, batch, batch); err != nil {
		t.Fatalf("produce after killing leader %d: %v", victim, err)
	}
	c.converge(live, func(v clusterView) error { return checkFailedOver(v, before, topic, victim, live) })
	checkSeqs(t, topic, consumer.waitFor(t, partitions, 2*batch, time.Minute), partitions, 2*batch)

	c.restart(victim)
	v := c.converge(c.ids, healthy(topic, partitions, c.ids))
	t.Logf("broker %d back, ISR whole: %s", victim, v)
	if err := produceSeqs(ctx, cl, topic, partitions, 2*batch, batch); err != nil {
		t.Fatalf("produce after broker %d came back: %v", victim, err)
	}
	checkSeqs(t, topic, consumer.waitFor(t, partitions, 3*batch, time.Minute), partitions, 3*batch)
	// A new reader sees the same logs from the start.
	checkSeqs(t, topic, consumeSeqs(t, c.bootstrap(), topic, partitions, 3*batch, time.Minute), partitions, 3*batch)
}
