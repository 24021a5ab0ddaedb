package interop

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionView is what a broker serves of partition 0 of a topic: its
// offsets, every batch as raw bytes (read_uncommitted), the aborted
// transactions a read_committed fetch reports, and its producers.
type partitionView struct {
	LogStart, HighWatermark, LastStable int64
	Batches                             [][]byte
	Aborted                             []abortedTxn
	Producers                           []producerView
}

type abortedTxn struct{ ProducerID, FirstOffset int64 }

type producerView struct {
	ID                    int64
	Epoch                 int32
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64
}

// serve reads the view of topic from the broker cl talks to, retrying
// while the partition is not yet served (a broker just started).
func serve(t *testing.T, cl *kgo.Client, topic string) partitionView {
	t.Helper()
	var v partitionView
	testutil.Eventually(t, 60*time.Second, func() error {
		var err error
		v, err = readView(cl, topic)
		return err
	})
	return v
}

func readView(cl *kgo.Client, topic string) (partitionView, error) {
	var v partitionView
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	uncommitted, first, err := fetchAll(ctx, cl, topic, 0)
	if err != nil {
		return v, err
	}
	committed, _, err := fetchAll(ctx, cl, topic, 1)
	if err != nil {
		return v, err
	}
	v.LogStart, v.HighWatermark, v.LastStable = first.LogStartOffset, first.HighWatermark, committed.LastStableOffset
	v.Batches, v.Aborted = uncommitted.batches, committed.aborted
	// A read_committed fetch stops at the LSO: it must hold exactly the
	// batches below it that read_uncommitted returns.
	for i, b := range committed.batches {
		if i >= len(v.Batches) || !bytes.Equal(b, v.Batches[i]) {
			return v, fmt.Errorf("%s: read_committed batch %d differs from read_uncommitted", topic, i)
		}
	}
	v.Producers, err = describeProducers(ctx, cl, topic)
	return v, err
}

type fetched struct {
	batches          [][]byte
	aborted          []abortedTxn
	LastStableOffset int64
}

// fetchAll fetches partition 0 of topic from its log start to the high
// watermark (isolation 0) or last stable offset (1).
func fetchAll(ctx context.Context, cl *kgo.Client, topic string, isolation int8) (fetched, kmsg.FetchResponseTopicPartition, error) {
	var out fetched
	var first kmsg.FetchResponseTopicPartition
	offset, err := logStart(ctx, cl, topic)
	if err != nil {
		return out, first, err
	}
	for round := 0; ; round++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID = -1
		req.MaxWaitMillis = 10
		req.MaxBytes = 64 << 20
		req.IsolationLevel = isolation
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = 64 << 20
		rp.CurrentLeaderEpoch = -1
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return out, first, fmt.Errorf("fetch %s at %d: %w", topic, offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return out, first, fmt.Errorf("fetch %s: %d topics in response", topic, len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if round == 0 {
			first = p
		}
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return out, first, fmt.Errorf("fetch %s at %d: %w", topic, offset, err)
		}
		end := p.HighWatermark
		if isolation == 1 {
			end = p.LastStableOffset
		}
		out.LastStableOffset = p.LastStableOffset
		for _, at := range p.AbortedTransactions {
			a := abortedTxn{at.ProducerID, at.FirstOffset}
			if !slices.Contains(out.aborted, a) {
				out.aborted = append(out.aborted, a)
			}
		}
		next, n, err := batch.EachBatch(p.RecordBatches, func(h *batch.Header, b []byte) error {
			if h.BaseOffset < end {
				out.batches = append(out.batches, slices.Clone(b))
			}
			return nil
		})
		if err != nil {
			return out, first, fmt.Errorf("fetch %s at %d: %w", topic, offset, err)
		}
		if n > 0 {
			offset = next
		}
		if offset >= end {
			return out, first, nil
		}
		if n == 0 {
			return out, first, fmt.Errorf("fetch %s at %d: no batch below %d", topic, offset, end)
		}
		if round > 10000 {
			return out, first, fmt.Errorf("fetch %s: no end", topic)
		}
	}
}

func describeProducers(ctx context.Context, cl *kgo.Client, topic string) ([]producerView, error) {
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe producers of %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("describe producers of %s: %d topics", topic, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe producers of %s: %w", topic, err)
	}
	var out []producerView
	for _, s := range p.ActiveProducers {
		out = append(out, producerView{s.ProducerID, s.ProducerEpoch, s.LastSequence, s.LastTimestamp, s.CoordinatorEpoch, s.CurrentTxnStartOffset})
	}
	slices.SortFunc(out, func(a, b producerView) int { return int(a.ID - b.ID) })
	return out, nil
}

// diffViews describes how got (served by who) differs from want.
func diffViews(topic, who string, want, got partitionView) []string {
	var d []string
	if want.LogStart != got.LogStart || want.HighWatermark != got.HighWatermark || want.LastStable != got.LastStable {
		d = append(d, fmt.Sprintf("%s on %s: log start/high watermark/LSO %d/%d/%d, want %d/%d/%d", topic, who,
			got.LogStart, got.HighWatermark, got.LastStable, want.LogStart, want.HighWatermark, want.LastStable))
	}
	if len(want.Batches) != len(got.Batches) {
		d = append(d, fmt.Sprintf("%s on %s: %d batches, want %d", topic, who, len(got.Batches), len(want.Batches)))
	}
	for i := range min(len(want.Batches), len(got.Batches)) {
		if !bytes.Equal(want.Batches[i], got.Batches[i]) {
			wh, _ := batch.ParseHeader(want.Batches[i])
			gh, _ := batch.ParseHeader(got.Batches[i])
			d = append(d, fmt.Sprintf("%s on %s: batch %d differs: base offset %d (%d bytes), want %d (%d bytes)", topic, who, i, gh.BaseOffset, len(got.Batches[i]), wh.BaseOffset, len(want.Batches[i])))
			break
		}
	}
	if !slices.Equal(want.Aborted, got.Aborted) {
		d = append(d, fmt.Sprintf("%s on %s: aborted transactions %v, want %v", topic, who, got.Aborted, want.Aborted))
	}
	if !slices.Equal(want.Producers, got.Producers) {
		d = append(d, fmt.Sprintf("%s on %s: producers\n  %+v\nwant\n  %+v", topic, who, got.Producers, want.Producers))
	}
	return d
}

// checkServes fails t unless the broker cl talks to serves every topic as
// want records it.
func checkServes(t *testing.T, cl *kgo.Client, who string, want map[string]partitionView) map[string]partitionView {
	t.Helper()
	got := map[string]partitionView{}
	var diffs []string
	for _, topic := range slices.Sorted(maps.Keys(want)) {
		got[topic] = serve(t, cl, topic)
		diffs = append(diffs, diffViews(topic, who, want[topic], got[topic])...)
	}
	if len(diffs) > 0 {
		t.Errorf("%s does not serve what was written:\n%s", who, strings.Join(diffs, "\n"))
	}
	return got
}

// logStart asks ListOffsets for the earliest offset of partition 0.
func logStart(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -2, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("list offsets of %s: %d topics", topic, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	return p.Offset, nil
}
