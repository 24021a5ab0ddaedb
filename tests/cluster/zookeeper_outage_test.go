package cluster

import (
	"context"
	"testing"
	"time"
)

// outage is how long ZooKeeper stays down: longer than the brokers'
// session timeout, which must not matter, since ZooKeeper restores
// sessions from its data dir and gives them a fresh timeout on restart.
const outage = sessionTimeout + 2*time.Second

// TestZooKeeperRestart stops ZooKeeper for longer than a session timeout
// and starts it again on the same data. Meanwhile the brokers keep serving
// produce (acks=all) and Metadata with the leaders they had; once
// ZooKeeper is back the controller, the registrations and the admin path
// work again without any broker restart, and nothing written is lost.
func TestZooKeeperRestart(t *testing.T) {
	c := startCluster(t, 3, nil)
	const topic, partitions, batch = "zk-outage", 6, 50
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	cl := producer(t, c.bootstrap())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := produceSeqs(ctx, cl, topic, partitions, 0, batch); err != nil {
		t.Fatal(err)
	}

	c.zk.Stop()
	down := time.Now()
	// The data path does not need ZooKeeper: produce through the whole
	// outage, a small batch every tick.
	sent := batch
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ; time.Since(down) < outage; <-tick.C {
		pctx, pcancel := context.WithTimeout(ctx, requestTimeout)
		err := produceSeqs(pctx, cl, topic, partitions, sent, 10)
		pcancel()
		if err != nil {
			t.Fatalf("produce %v into the ZooKeeper outage: %v", time.Since(down).Round(time.Millisecond), err)
		}
		sent += 10
	}
	for _, id := range c.ids {
		resp, err := c.metadata(id)
		if err != nil {
			t.Fatalf("during the outage: %v", err)
		}
		for _, p := range before.topicPartitions(topic) {
			if got := viewOf(resp).Partitions[p].Leader; got != before.Partitions[p].Leader {
				t.Errorf("during the outage broker %d says %s is led by %d, was %d", id, p, got, before.Partitions[p].Leader)
			}
		}
	}

	c.zk.Restart()
	back := time.Now()
	t.Logf("ZooKeeper down for %v, produced %d records per partition meanwhile", back.Sub(down).Round(time.Millisecond), sent-batch)
	c.waitRegistered(c.ids)
	after := c.converge(c.ids, healthy(topic, partitions, c.ids))
	for _, p := range before.topicPartitions(topic) {
		if after.Partitions[p].Leader != before.Partitions[p].Leader {
			t.Errorf("%s: leader %d after the outage, was %d: no broker failed, so none should have moved",
				p, after.Partitions[p].Leader, before.Partitions[p].Leader)
		}
	}
	// The controller path works again: a new topic gets leaders.
	c.createTopic("after-zk-outage", 3, nil)
	c.converge(c.ids, healthy("after-zk-outage", 3, c.ids))
	t.Logf("cluster whole %v after ZooKeeper came back", time.Since(back).Round(time.Millisecond))

	if err := produceSeqs(ctx, cl, topic, partitions, sent, batch); err != nil {
		t.Fatalf("produce after the outage: %v", err)
	}
	sent += batch
	checkSeqs(t, topic, consumeSeqs(t, c.bootstrap(), topic, partitions, sent, time.Minute), partitions, sent)
}
