package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/internal/testutil"
)

const offsetsTopic = "__consumer_offsets"

// TestCoordinatorKill9KeepsCommits kills a group coordinator with SIGKILL
// right after it acknowledged offset commits. A commit is acknowledged once
// the followers have its record, but with replica.fetch.wait.max.ms=5000
// they learn the high watermark that covers it up to five seconds later,
// so the new leader's high watermark trails its log end: the new
// coordinator must load to the log end, as Kafka's does, or the commits
// acknowledged last are lost.
func TestCoordinatorKill9KeepsCommits(t *testing.T) {
	const partitions, groups, topic = 3, 12, "commits"
	c := startCluster(t, 3, map[string]string{
		"replica.fetch.wait.max.ms":    "5000",
		"offsets.topic.num.partitions": strconv.Itoa(partitions),
	})
	c.createTopic(topic, 1, nil)
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names := make([]string, groups)
	for i := range names {
		names[i] = fmt.Sprintf("kill9-group-%d", i)
	}
	commit := func(group string, at int64) error {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := adm.CommitOffsets(rctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		return err
	}
	// The first commits create __consumer_offsets; then every partition of
	// it has all three replicas in sync.
	for _, g := range names {
		testutil.Eventually(t, convergeTimeout, func() error { return commit(g, 1) })
	}
	c.converge(c.ids, healthy(offsetsTopic, partitions, c.ids))

	coordinator := map[string]int32{}
	testutil.Eventually(t, convergeTimeout, func() error {
		for _, r := range adm.FindGroupCoordinators(ctx, names...) {
			if r.Err != nil {
				return fmt.Errorf("coordinator of %s: %w", r.Name, r.Err)
			}
			coordinator[r.Name] = r.NodeID
		}
		return nil
	})
	victim := coordinator[names[0]]

	// The victim's groups commit last, so that their records are the ones
	// whose high watermark the followers have not heard of when it dies.
	want := map[string]int64{}
	var last []string
	for i, g := range names {
		want[g] = int64(100 + i)
		if coordinator[g] == victim {
			last = append(last, g)
			continue
		}
		if err := commit(g, want[g]); err != nil {
			t.Fatalf("commit %s: %v", g, err)
		}
	}
	for _, g := range last {
		if err := commit(g, want[g]); err != nil {
			t.Fatalf("commit %s: %v", g, err)
		}
	}
	c.kill9(victim)
	t.Logf("killed coordinator %d of %v right after their commits", victim, last)

	live := c.others(victim)
	c.converge(live, func(v clusterView) error {
		return v.checkTopicHealthy(offsetsTopic, partitions, 3, live, false)
	})
	// A new client: the old one keeps the dead coordinator cached.
	var seeds []string
	for _, id := range live {
		seeds = append(seeds, c.broker(id).Addr())
	}
	after := kadm.NewClient(testutil.Client(t, strings.Join(seeds, ",")))
	for _, g := range names {
		var got int64 = -1
		testutil.Eventually(t, convergeTimeout, func() error {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			defer cancel()
			resp, err := after.FetchOffsets(rctx, g)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return fmt.Errorf("fetch offsets of %s: %w", g, err)
			}
			o, ok := resp.Lookup(topic, 0)
			if !ok {
				got = -1
				return nil
			}
			got = o.At
			return nil
		})
		if got != want[g] {
			t.Errorf("group %s (coordinator %d before the kill): committed offset %d after failover, want %d", g, coordinator[g], got, want[g])
		}
	}
}
