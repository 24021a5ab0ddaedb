package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit serves OffsetCommit v0-v9 (v10+ addresses topics by id,
// which the broker must resolve to names first). It returns once the
// commit is durable or failed. The broker checks topic existence
// (UNKNOWN_TOPIC_OR_PARTITION) before calling.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	return awaitWrite(ctx, c.StartOffsetCommit(req))
}

// pendingWrite is a commit whose writes are queued (PendingCommit,
// PendingTxnCommit).
type pendingWrite[R any] interface {
	Done() <-chan error
	Response(timedOut bool) R
}

// awaitWrite waits for pw's writes, or for ctx, and returns its answer.
func awaitWrite[R any](ctx context.Context, pw pendingWrite[R]) R {
	timedOut := false
	if done := pw.Done(); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			timedOut = true
		}
	}
	return pw.Response(timedOut)
}

// PendingCommit is an OffsetCommit whose writes are queued: the form of
// OffsetCommit for a driver that cannot block (the simulation).
type PendingCommit struct {
	pendingCodes
	req *kmsg.OffsetCommitRequest
}

// pendingCodes are a queued commit's outcome: the coordinator-level error
// for every partition, or each partition's code once its write completed.
type pendingCodes struct {
	code    int16
	codes   []int16
	notify  chan error
	waiting bool
}

// Done receives once the commit's append completed (or failed); nil when
// the commit wrote nothing and its answer is ready.
func (pc *pendingCodes) Done() <-chan error {
	if pc.code == 0 && pc.waiting {
		return pc.notify
	}
	return nil
}

// codeAt is partition i's error code in the answer; timedOut: the caller
// stopped waiting (REQUEST_TIMED_OUT for every partition).
func (pc *pendingCodes) codeAt(timedOut bool, i int) int16 {
	switch {
	case timedOut && pc.Done() != nil:
		return kerr.RequestTimedOut.Code
	case pc.code != 0:
		return pc.code
	}
	return pc.codes[i]
}

// Response is the answer once Done received, or REQUEST_TIMED_OUT for
// every partition if the caller stopped waiting (timedOut).
func (pc *PendingCommit) Response(timedOut bool) *kmsg.OffsetCommitResponse {
	req := pc.req
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = pc.codeAt(timedOut, i)
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// StartOffsetCommit validates an OffsetCommit and queues its writes.
func (c *Coordinator) StartOffsetCommit(req *kmsg.OffsetCommitRequest) *PendingCommit {
	nowMs := c.cfg.Now().UnixMilli()
	a := commitArgs{
		groupID:              req.Group,
		memberID:             req.MemberID,
		instanceID:           deref(req.InstanceID),
		generation:           req.Generation,
		unknownGroupNotFound: req.Version >= 9,
	}
	if req.Version == 0 {
		a.memberID, a.generation = "", -1
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			e := offsetEntry{
				offset:          p.Offset,
				leaderEpoch:     -1,
				metadata:        deref(p.Metadata),
				commitTimestamp: nowMs,
				expireTimestamp: -1,
			}
			if req.Version >= 6 {
				e.leaderEpoch = p.LeaderEpoch
			}
			if req.Version == 1 && p.Timestamp != -1 {
				e.commitTimestamp = p.Timestamp
			}
			if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
				e.expireTimestamp = nowMs + req.RetentionTimeMillis
			}
			a.partitions = append(a.partitions, commitPartition{tp: topicPartition{t.Topic, p.Partition}, entry: e})
		}
	}
	pc := &PendingCommit{req: req, pendingCodes: pendingCodes{notify: make(chan error, 1)}}
	pc.code = c.step(req.Group, func(s *shard, now time.Time, eff *effects) {
		pc.codes = s.commit(a, now, eff, pc.notify)
		pc.waiting = len(eff.writes) > 0
	})
	return pc
}

type fetchGroup struct {
	group  string
	topics []kmsg.OffsetFetchRequestGroupTopic // nil: all committed offsets
}

// OffsetFetch serves OffsetFetch v1-v9 (v8+ fetches several groups).
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			code, topics := c.fetchGroup(rg.Group, rg.Topics, req.RequireStable)
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			g.ErrorCode = code
			g.Topics = topics
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	var topics []kmsg.OffsetFetchRequestGroupTopic
	if req.Topics != nil {
		topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			topics = append(topics, gt)
		}
	}
	code, groupTopics := c.fetchGroup(req.Group, topics, req.RequireStable)
	if code != 0 && req.Version < 2 {
		// No top-level error before v2: every requested partition
		// carries it.
		groupTopics = nil
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, fetchPartition(fetchedOffset{tp: topicPartition{t.Topic, p}, offset: -1, leaderEpoch: -1, err: code}))
			}
			groupTopics = append(groupTopics, rt)
		}
	}
	resp.ErrorCode = code
	for _, gt := range groupTopics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = gt.Topic
		for _, p := range gt.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) fetchGroup(groupID string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) (int16, []kmsg.OffsetFetchResponseGroupTopic) {
	var tps []topicPartition
	if topics != nil {
		tps = []topicPartition{}
		for _, t := range topics {
			for _, p := range t.Partitions {
				tps = append(tps, topicPartition{t.Topic, p})
			}
		}
	}
	var fetched []fetchedOffset
	if code := c.step(groupID, func(s *shard, _ time.Time, _ *effects) {
		fetched = s.fetchOffsets(groupID, tps, requireStable)
	}); code != 0 {
		return code, nil
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	for _, f := range fetched {
		if len(out) == 0 || out[len(out)-1].Topic != f.tp.topic {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = f.tp.topic
			out = append(out, rt)
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, fetchPartition(f))
	}
	return 0, out
}

func fetchPartition(f fetchedOffset) kmsg.OffsetFetchResponseGroupTopicPartition {
	p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	p.Partition = f.tp.partition
	p.Offset = f.offset
	p.LeaderEpoch = f.leaderEpoch
	p.Metadata = strPtr(f.metadata)
	p.ErrorCode = f.err
	return p
}

// OffsetDelete serves OffsetDelete v0+.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	var tps []topicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, topicPartition{t.Topic, p.Partition})
		}
	}
	var codes []int16
	code := c.stepAndWrite(ctx, req.Group, func(s *shard, now time.Time) (int16, []record) {
		var groupCode int16
		var recs []record
		groupCode, codes, recs = s.deleteOffsets(req.Group, tps, now)
		return groupCode, recs
	})
	resp.ErrorCode = code
	if code != 0 {
		return resp
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = codes[i]
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
