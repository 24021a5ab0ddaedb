package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupOffsetsSurviveRestart commits offsets in the middle of each
// partition, restarts the broker, and checks that a new member of the group
// resumes exactly there: nothing before the commit again, nothing after it
// skipped.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	tb := startBroker(t, nil)
	const topic, group, partitions, perPartition = "resume", "resume-group", 4, 100
	tb.createTopic(topic, partitions, nil)
	producer := tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, producer, topic, partitions, partitions*perPartition, true)

	groupOpts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
	}
	first := tb.client(groupOpts...)
	ctx := testContext(t)
	consumeUntil(t, ctx, first, func(got map[int32][]int64) bool { return countOffsets(got) >= partitions*perPartition })

	commit := map[int32]int64{}
	offsets := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p := range int32(partitions) {
		commit[p] = int64(7 + 19*p)
		offsets[topic][p] = kgo.EpochOffset{Epoch: 0, Offset: commit[p]}
	}
	var commitErr error
	first.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err != nil {
			return
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 && commitErr == nil {
					commitErr = kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatalf("commit: %v", commitErr)
	}
	first.Close()

	tb.restart()

	fetched := fetchCommitted(t, tb, group, topic, partitions)
	for p, want := range commit {
		if got := fetched[p]; got.Offset != want || got.LeaderEpoch != 0 {
			t.Fatalf("partition %d after restart: committed offset %d epoch %d, want %d epoch 0", p, got.Offset, got.LeaderEpoch, want)
		}
	}

	second := tb.client(groupOpts...)
	got := consumeUntil(t, ctx, second, func(got map[int32][]int64) bool {
		for p := range int32(partitions) {
			if n := len(got[p]); n == 0 || got[p][n-1] < perPartition-1 {
				return false
			}
		}
		return true
	})
	for p := range int32(partitions) {
		offs := got[p]
		if int64(len(offs)) != perPartition-commit[p] {
			t.Fatalf("partition %d: resumed with %d records %v..., want %d from offset %d", p, len(offs), offs[:min(len(offs), 3)], perPartition-commit[p], commit[p])
		}
		for i, o := range offs {
			if o != commit[p]+int64(i) {
				t.Fatalf("partition %d: record %d of the resumed read is offset %d, want %d", p, i, o, commit[p]+int64(i))
			}
		}
	}
}

// consumeUntil polls cl until done accepts the offsets read so far, per
// partition in read order.
func consumeUntil(t *testing.T, ctx context.Context, cl *kgo.Client, done func(map[int32][]int64) bool) map[int32][]int64 {
	t.Helper()
	got := map[int32][]int64{}
	for !done(got) {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		stalled := pctx.Err() != nil
		cancel()
		if stalled {
			t.Fatalf("consumption stalled with %d records read", countOffsets(got))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r.Offset) })
	}
	return got
}

func countOffsets(got map[int32][]int64) int {
	n := 0
	for _, offs := range got {
		n += len(offs)
	}
	return n
}

// fetchCommitted reads a group's committed offsets with a raw OffsetFetch
// v8, polling while the coordinator answers with a retriable error (it
// loads __consumer_offsets after a restart).
func fetchCommitted(t *testing.T, tb *testBroker, group, topic string, partitions int32) map[int32]kmsg.OffsetFetchResponseGroupTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(8)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic = topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := tb.roundTrip(req).(*kmsg.OffsetFetchResponse)
		g := resp.Groups[0]
		if g.ErrorCode == 0 {
			out := map[int32]kmsg.OffsetFetchResponseGroupTopicPartition{}
			for _, ft := range g.Topics {
				for _, fp := range ft.Partitions {
					if fp.ErrorCode != 0 {
						t.Fatalf("offset fetch %s-%d: %v", ft.Topic, fp.Partition, kerr.ErrorForCode(fp.ErrorCode))
					}
					out[fp.Partition] = fp
				}
			}
			return out
		}
		if err := kerr.ErrorForCode(g.ErrorCode); !kerr.IsRetriable(err) || time.Now().After(deadline) {
			t.Fatalf("offset fetch for %s: %v", group, err)
		}
	}
}

// TestGroupLiveAcrossRestart keeps a two-member group consuming while the
// broker restarts under it and the producer keeps writing: the members come
// back (rejoining or not), consume everything, and nothing committed is
// delivered again.
func TestGroupLiveAcrossRestart(t *testing.T) {
	tb := startBroker(t, map[string]string{"group.min.session.timeout.ms": "1000"})
	r := newGroupRun("live", "live-group", 6)
	tb.createTopic(r.topic, r.partitions, nil)
	adm := tb.admin()
	stop := r.startProducer(t, tb)
	m1 := r.startMember(t, tb, "m1", kgo.RangeBalancer())
	m2 := r.startMember(t, tb, "m2", kgo.RangeBalancer())
	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with m1, m2", r.settled(m1, m2)))
	r.waitProgress(t, 200)

	tb.restart()

	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled after the restart", r.settled(m1, m2)))
	r.waitProgress(t, 200)
	stop()
	r.finish(t, adm)
}
