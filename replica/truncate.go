package replica

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// truncateDiverged cuts the log of every partition that waits for
// truncation, asking the leader with OffsetForLeaderEpoch where the
// follower's latest epoch ends on the leader (Kafka's KIP-101/279 rule).
// It reports false when the request failed.
func (f *fetcher) truncateDiverged(ctx context.Context) bool {
	req := f.buildEpochRequest()
	if req == nil {
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, f.m.cfg.SocketTimeout)
	defer cancel()
	r, err := f.m.cfg.Cluster.Request(rctx, f.source, fetcherPurpose, req)
	if err != nil {
		if ctx.Err() == nil {
			f.m.logger.Warn("OffsetForLeaderEpoch failed", "leader", f.source, "err", err)
		}
		return false
	}
	resp := r.(*kmsg.OffsetForLeaderEpochResponse)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := log.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			fp := f.parts[tp]
			if fp == nil || !fp.truncate || fp.leaderEpoch != f.sentEpochs[tp] {
				continue
			}
			f.applyEpochAnswer(fp, rp)
		}
	}
	return true
}

func (f *fetcher) buildEpochRequest() *kmsg.OffsetForLeaderEpochRequest {
	now := f.m.cfg.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.m.localID
	f.sentEpochs = map[log.TopicPartition]int32{}
	topics := map[string]int{}
	for tp, fp := range f.parts {
		if !fp.truncate || now.Before(fp.delayUntil) {
			continue
		}
		latest, step := fp.p.TruncationEpoch(f.m.logger)
		if latest < 0 {
			// No epochs: the log was cut to its HW, or failed to be.
			fp.follow(step, now, f.m.cfg.FetchBackoff)
			continue
		}
		i, ok := topics[tp.Topic]
		if !ok {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[tp.Topic] = i
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = fp.leaderEpoch
		rp.LeaderEpoch = latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		f.sentEpochs[tp] = fp.leaderEpoch
	}
	if len(req.Topics) == 0 {
		return nil
	}
	return req
}

// applyEpochAnswer truncates one partition from the leader's answer; f.mu
// is held.
func (f *fetcher) applyEpochAnswer(fp *fetchPart, rp kmsg.OffsetForLeaderEpochResponseTopicPartition) {
	fp.follow(fp.p.ApplyEpochAnswer(&rp, f.m.logger), f.m.cfg.Now(), f.m.cfg.FetchBackoff)
}
