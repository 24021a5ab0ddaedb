package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestCoordinatorFailoverKeepsCommits kills a group coordinator with
// SIGKILL right after it acknowledged offset commits, and reads every
// group's offsets from the coordinator that takes over: all acknowledged
// commits must be there.
//
// A commit is acknowledged once every ISR member has it, but a follower
// learns the high watermark that covers it only from its next fetch
// response, which replica.fetch.wait.max.ms=5000 delays by up to 5 s. So
// the follower elected leader has the commits in its log beyond its high
// watermark: as in Kafka (GroupMetadataManager loads to the log end), the
// new coordinator must load __consumer_offsets to the log end offset, not
// to the high watermark, or it forgets them.
func TestCoordinatorFailoverKeepsCommits(t *testing.T) {
	const offsetsPartitions, rounds, topic, partitions = 3, 3, "committed", 3
	c := startCluster(t, 3, groupsConfig(offsetsPartitions, map[string]string{"replica.fetch.wait.max.ms": "5000"}))
	c.createTopic(topic, partitions, nil)
	var groups []string
	for i := range 6 {
		groups = append(groups, fmt.Sprintf("keep-%d", i))
	}
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap(), clientLog()...))
	c.offsetsReady(adm, offsetsPartitions, groups...)

	acked := map[string]kadm.Offsets{}
	lostRounds := 0
	for round := range rounds {
		coords := c.groupCoordinators(adm, groups...)
		victim := coords[groups[round%len(groups)]]
		// The victim's groups last, so that its commits are the ones
		// acknowledged just before it dies.
		order := slices.Clone(groups)
		slices.SortStableFunc(order, func(a, b string) int {
			return boolInt(coords[a] == victim) - boolInt(coords[b] == victim)
		})
		for gi, g := range order {
			offs := kadm.Offsets{}
			for p := range int32(partitions) {
				offs.AddOffset(topic, p, int64(1000*(round+1)+10*gi+int(p)), -1)
			}
			commitAcked(t, adm, g, offs)
			acked[g] = offs
		}
		c.kill9(victim)

		var lost []string
		for _, g := range groups {
			got, err := fetchCommitted(c.bootstrap(), g, 2*convergeTimeout)
			if err != nil {
				t.Fatalf("round %d: no coordinator answered for group %s after broker %d died: %v", round, g, victim, err)
			}
			lost = append(lost, missingCommits(g, acked[g], got)...)
		}
		if len(lost) > 0 {
			lostRounds++
			t.Errorf("round %d: killed coordinator %d (of %v) right after it acknowledged commits; the next coordinator lost %d of them:\n  %s",
				round, victim, victimGroups(coords, victim), len(lost), strings.Join(lost, "\n  "))
		} else {
			t.Logf("round %d: killed coordinator %d (of %v); every acknowledged commit read back", round, victim, victimGroups(coords, victim))
		}
		c.restart(victim)
		c.converge(c.ids, healthy(offsetsTopic, offsetsPartitions, c.ids))
	}
	t.Logf("%d of %d rounds lost acknowledged commits", lostRounds, rounds)
}

// commitAcked commits offs for group (a simple commit, generation -1) until
// the coordinator acknowledges every partition: a commit that timed out
// (offsets.commit.timeout.ms) is not acknowledged, so it is sent again.
func commitAcked(t *testing.T, adm *kadm.Client, group string, offs kadm.Offsets) {
	t.Helper()
	testutil.Eventually(t, convergeTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
		defer cancel()
		resps, err := adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			return fmt.Errorf("commit %v for group %s: %w", offs, group, err)
		}
		return nil
	})
}

// missingCommits lists each acknowledged commit of group that got does not
// hold.
func missingCommits(group string, acked, got kadm.Offsets) []string {
	var out []string
	acked.Each(func(o kadm.Offset) {
		g, ok := got.Lookup(o.Topic, o.Partition)
		if !ok || g.At != o.At {
			out = append(out, fmt.Sprintf("group %s %s-%d: acknowledged offset %d, committed now %d (present %v)",
				group, o.Topic, o.Partition, o.At, g.At, ok))
		}
	})
	slices.Sort(out)
	return out
}

func victimGroups(coords map[string]int32, victim int32) []string {
	var out []string
	for g, id := range coords {
		if id == victim {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
