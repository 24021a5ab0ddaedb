package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestCommitTimesOutWithPausedFollower pauses (SIGSTOP) a follower of a
// group's __consumer_offsets partition while it is still in the ISR, so
// nothing the coordinator appends is committed until the ISR shrinks (the
// lag time) or the follower's ZooKeeper session expires.
// offsets.commit.timeout.ms bounds the wait, as in Kafka: a commit gets
// REQUEST_TIMED_OUT and a SyncGroup REBALANCE_IN_PROGRESS, well before
// the ISR shrinks.
func TestCommitTimesOutWithPausedFollower(t *testing.T) {
	const partitions = 3
	c := startCluster(t, 3, groupsConfig(partitions, map[string]string{
		"offsets.commit.timeout.ms":        "1000",
		"group.initial.rebalance.delay.ms": "0",
	}))
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap()))
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("stalled-%d", i))
	}
	coords := c.groupCoordinators(adm, names...)
	c.offsetsReady(adm, partitions, names...)
	// One group to rebalance and one to commit to as a simple consumer,
	// both on the same coordinator.
	group := names[0]
	coordinator := coords[group]
	simple := ""
	for _, n := range names[1:] {
		if coords[n] == coordinator {
			simple = n
			break
		}
	}
	if simple == "" {
		t.Fatalf("no second group on coordinator %d among %v", coordinator, coords)
	}
	// The follower to pause: not the controller if that can be helped.
	controller := c.controller()
	var follower int32 = -1
	for _, id := range c.others(coordinator) {
		if follower < 0 || id != controller {
			follower = id
		}
	}
	c.createTopic("stalled-topic", 1, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := newGroupMember(c, group, coordinator)
	j, err := m.join(ctx)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	c.pause(follower)
	t.Logf("group %s on broker %d; follower %d paused", group, coordinator, follower)

	if err := m.sync(ctx, j.Generation, []string{m.memberID}); !errors.Is(err, kerr.RebalanceInProgress) {
		t.Fatalf("sync while the follower is paused: %v, want REBALANCE_IN_PROGRESS", err)
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = simple, -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "stalled-topic"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	resp, err := m.broker.request(ctx, commit)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("commit while the follower is paused: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
}
