package kcat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

const (
	groupPartitions = 4
	groupRecords    = 400
	// groupTimeout bounds each wait of the group scenario: joining takes a
	// rebalance or two, consuming a few fetches.
	groupTimeout = 60 * time.Second
)

// TestKcatBalancedGroup runs two kcat -G members of one group: both get
// partitions, and together they read every record exactly once.
func TestKcatBalancedGroup(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	cl := testutil.Client(t, env.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	const topic, group = "compat-kcat-group", "compat-kcat-g"
	createTopic(t, adm, topic, groupPartitions)

	// -u: unbuffered output, so that the test sees records as they come.
	args := []string{"-b", env.Addr(), "-G", group, "-q", "-u", "-f", "%p %o %k\n",
		"-X", "auto.offset.reset=earliest", topic}
	members := []*background{startKcat(t, args...), startKcat(t, args...)}
	report := func() string {
		var b strings.Builder
		for i, m := range members {
			fmt.Fprintf(&b, "--- kcat member %d stdout ---\n%s\n--- kcat member %d stderr ---\n%s\n",
				i, m.stdout.String(), i, m.stderr.String())
		}
		return b.String() + env.Report("", "")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(report())
		}
	})

	// Both members joined and each holds partitions.
	var assigned [][]int32
	testutil.Eventually(t, groupTimeout, func() error {
		var err error
		assigned, err = memberPartitions(adm, group, topic)
		if err != nil {
			return err
		}
		if len(assigned) != 2 || len(assigned[0]) == 0 || len(assigned[1]) == 0 {
			return fmt.Errorf("group %s assignment %v: want two members holding partitions", group, assigned)
		}
		if all := slices.Sorted(slices.Values(slices.Concat(assigned...))); len(all) != groupPartitions || slices.Compact(all)[groupPartitions-1] != groupPartitions-1 {
			return fmt.Errorf("group %s assignment %v: want partitions 0-%d each once", group, assigned, groupPartitions-1)
		}
		return nil
	})

	var recs []*kgo.Record
	for i := range groupRecords {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % groupPartitions), Key: fmt.Appendf(nil, "k%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", groupRecords, err)
	}

	consumed := func() int {
		n := 0
		for _, m := range members {
			n += len(harness.Lines(m.stdout.String()))
		}
		return n
	}
	testutil.Eventually(t, groupTimeout, func() error {
		if n := consumed(); n < groupRecords {
			return fmt.Errorf("members consumed %d of %d records", n, groupRecords)
		}
		return nil
	})
	for i, m := range members {
		if err := m.stop(); err != nil {
			t.Errorf("stop kcat member %d: %v", i, err)
		}
	}

	// Every record once; the members read disjoint sets of partitions.
	seen := map[string]int{}
	owner := map[int32]int{}
	for i, m := range members {
		for _, line := range harness.Lines(m.stdout.String()) {
			var p int32
			var offset int64
			var key string
			if _, err := fmt.Sscanf(line, "%d %d %s", &p, &offset, &key); err != nil {
				t.Fatalf("member %d: line %q: %v\n%s", i, line, err, report())
			}
			if o, ok := owner[p]; ok && o != i {
				t.Errorf("partition %d was read by both members", p)
			}
			owner[p] = i
			seen[key]++
		}
		if m.stdout.String() == "" {
			t.Errorf("member %d read nothing, though the group had two members holding partitions (%v)", i, assigned)
		}
	}
	for i := range groupRecords {
		if k := fmt.Sprintf("k%d", i); seen[k] != 1 {
			t.Errorf("record %s read %d times, want once", k, seen[k])
		}
	}
	if len(seen) != groupRecords {
		t.Errorf("read %d distinct keys, want %d", len(seen), groupRecords)
	}

	// Closing committed the end of every partition.
	testutil.Eventually(t, groupTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offsets, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		for p := range int32(groupPartitions) {
			o, ok := offsets.Lookup(topic, p)
			if !ok || o.Err != nil || o.At != groupRecords/groupPartitions {
				return fmt.Errorf("committed offset of partition %d: %+v, want %d", p, o, groupRecords/groupPartitions)
			}
		}
		return nil
	})
}

// memberPartitions returns, per member of group, the partitions of topic it
// was assigned.
func memberPartitions(adm *kadm.Client, group, topic string) ([][]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	groups, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	g, ok := groups[group]
	if !ok {
		return nil, errors.New("group not described")
	}
	if g.Err != nil {
		return nil, g.Err
	}
	if g.State != "Stable" {
		return nil, fmt.Errorf("group state %s", g.State)
	}
	var out [][]int32
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, fmt.Errorf("member %s: assignment is not the consumer protocol", m.MemberID)
		}
		var ps []int32
		for _, at := range a.Topics {
			if at.Topic == topic {
				ps = append(ps, at.Partitions...)
			}
		}
		out = append(out, ps)
	}
	return out, nil
}
