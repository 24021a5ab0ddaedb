package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestDeleteRecordsSurvivesLeaderKill9: records removed with DeleteRecords
// stay removed when the leader is killed right after the answer. Kafka
// answers only once the low watermark (the least log start offset over
// the live replicas) reaches the offset, so every follower has moved its
// log start offset too; a leader answering after its own delete lets the
// new leader serve the deleted records.
func TestDeleteRecordsSurvivesLeaderKill9(t *testing.T) {
	c := startCluster(t, 3, nil)
	const topic, partitions, n, deleteBefore = "delete-failover", 3, 20, 15
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	victim := leaderVictim(t, before, topic)
	p := before.ledBy(topic, victim)[0].partition

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := produceSeqs(ctx, producer(t, c.bootstrap()), topic, partitions, 0, n); err != nil {
		t.Fatalf("produce: %v", err)
	}
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap()))
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: deleteBefore})
	dr, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dr.Lookup(topic, p); d.Err != nil || d.LowWatermark != deleteBefore {
		t.Fatalf("delete records: %+v", d)
	}

	c.kill9(victim)
	live := c.others(victim)
	after := c.converge(live, func(v clusterView) error { return checkFailedOver(v, before, topic, victim, live) })
	t.Logf("killed broker %d, leader of %s-%d; now: %s", victim, topic, p, after)

	starts, err := kadm.NewClient(testutil.Client(t, c.bootstrap())).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, p); o.Err != nil || o.Offset != deleteBefore {
		t.Fatalf("%s-%d starts at %d (%v) on the new leader, want %d", topic, p, o.Offset, o.Err, deleteBefore)
	}
	consumer := testutil.Client(t, c.bootstrap(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	fs := consumer.PollFetches(ctx)
	if err := ctx.Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range fs.Records() {
		if r.Offset < deleteBefore {
			t.Fatalf("deleted record at offset %d came back after the failover", r.Offset)
		}
	}
	if len(fs.Records()) == 0 {
		t.Fatalf("no records consumed: %v", fs.Errors())
	}
}

// TestDeleteRecordsWaitsForStalledFollower: with a follower stopped
// (SIGSTOP) but still registered, DeleteRecords cannot reach the low
// watermark and answers REQUEST_TIMED_OUT after timeout_ms, as Kafka's
// DelayedDeleteRecords; once the follower's ZooKeeper session expires its
// broker is no longer alive, does not count, and DeleteRecords succeeds.
func TestDeleteRecordsWaitsForStalledFollower(t *testing.T) {
	c := startCluster(t, 3, nil)
	const topic, partitions, n, deleteBefore = "delete-stalled", 3, 20, 15
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	leader := leaderVictim(t, before, topic)
	p := before.ledBy(topic, leader)[0].partition
	// The follower to stall is neither the leader nor the controller.
	stalled := slices.DeleteFunc(slices.Clone(c.ids), func(id int32) bool { return id == leader || id == before.Controller })[0]

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := produceSeqs(ctx, producer(t, c.bootstrap()), topic, partitions, 0, n); err != nil {
		t.Fatalf("produce: %v", err)
	}
	c.pause(stalled)
	// Seeded with the leader: a stopped broker does not answer Metadata
	// (the client retries elsewhere after its read timeout).
	adm := kadm.NewClient(testutil.Client(t, c.broker(leader).Addr()))
	adm.SetTimeoutMillis(1000)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: deleteBefore})
	dr, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dr.Lookup(topic, p); !errors.Is(d.Err, kerr.RequestTimedOut) {
		t.Fatalf("delete records with broker %d stopped: %+v, want REQUEST_TIMED_OUT", stalled, d)
	}
	testutil.Eventually(t, convergeTimeout, func() error {
		dr, err := adm.DeleteRecords(ctx, offsets)
		if err != nil {
			return err
		}
		if d, _ := dr.Lookup(topic, p); d.Err != nil || d.LowWatermark != deleteBefore {
			return fmt.Errorf("delete records with broker %d stopped: %+v", stalled, d)
		}
		return nil
	})
}
