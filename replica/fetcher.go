package replica

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// fetcherPurpose names the inter-broker connection followers fetch on.
const fetcherPurpose = "replica-fetcher"

// fetcher copies the partitions this broker follows from one leader
// broker, all in one Fetch request, as Kafka's ReplicaFetcherThread. A
// partition added to it first truncates its log with OffsetForLeaderEpoch,
// so that a tail the leader does not have is cut before fetching.
type fetcher struct {
	m      *Manager
	source int32
	wake   chan struct{}

	// mu is held while a response is applied to the logs, so that removing
	// a partition (on a role change) waits for any append to it to end.
	mu      sync.Mutex
	parts   map[log.TopicPartition]*fetchPart
	started bool
	// sentEpochs is the leader epoch each partition had when its
	// OffsetForLeaderEpoch went out (used by the fetcher goroutine only).
	sentEpochs map[log.TopicPartition]int32
	// session is the fetch session with the leader (fetch_session.go;
	// the fetcher goroutine only).
	session fetchSessionHandler
}

type fetchPart struct {
	p           *Partition
	leaderEpoch int32
	truncate    bool
	// delayUntil backs off a partition after an error (replica.fetch.backoff.ms).
	delayUntil time.Time
	// inSync: our log end reached the leader's HW in its last answer
	// (Kafka's PartitionFetchState.isReplicaInSync); only replicas out of
	// sync are held back by the follower throttle.
	inSync bool
}

func (m *Manager) addFetch(p *Partition, leader, leaderEpoch int32) {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	f := m.fetchers[leader]
	if f == nil {
		f = &fetcher{m: m, source: leader, wake: make(chan struct{}, 1), parts: map[log.TopicPartition]*fetchPart{}}
		m.fetchers[leader] = f
	}
	f.mu.Lock()
	f.parts[p.tp] = &fetchPart{p: p, leaderEpoch: leaderEpoch, truncate: true}
	f.mu.Unlock()
	f.signal()
	if m.runCtx != nil && !f.started {
		m.startFetcherLocked(f)
	}
}

func (m *Manager) removeFetch(tp log.TopicPartition) {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	for _, f := range m.fetchers {
		f.mu.Lock()
		delete(f.parts, tp)
		f.mu.Unlock()
	}
}

// startFetcherLocked runs f until Run's context ends; fetchMu is held.
func (m *Manager) startFetcherLocked(f *fetcher) {
	f.started = true
	ctx := m.runCtx
	m.fetchWG.Go(func() { f.run(ctx) })
}

func (f *fetcher) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) run(ctx context.Context) {
	cfg := f.m.cfg
	for ctx.Err() == nil {
		if !f.truncateDiverged(ctx) {
			f.sleep(ctx, cfg.FetchBackoff)
			continue
		}
		req, sent, next := f.buildFetch()
		if req == nil {
			f.idle(ctx, next)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, cfg.SocketTimeout+cfg.FetchWaitMax)
		resp, err := cfg.Cluster.Request(rctx, f.source, fetcherPurpose, req)
		cancel()
		if err != nil {
			f.session.handleError()
		} else {
			fr := resp.(*kmsg.FetchResponse)
			f.session.handleResponse(fr.ErrorCode, fr.SessionID)
			if fr.ErrorCode != 0 {
				err = kerr.ErrorForCode(fr.ErrorCode)
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				f.m.logger.Warn("replica fetch failed", "leader", f.source, "err", err)
			}
			f.sleep(ctx, cfg.FetchBackoff)
			continue
		}
		f.process(resp.(*kmsg.FetchResponse), sent)
	}
}

func (f *fetcher) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// idle waits for a partition to be added or, when next is set, for the
// earliest backed-off partition to become ready.
func (f *fetcher) idle(ctx context.Context, next time.Time) {
	var timer <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(max(next.Sub(f.m.cfg.Now()), 0))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
	case <-f.wake:
	case <-timer:
	}
}

// sentPartition is what a fetch asked for one partition, to check that the
// answer still applies when it arrives.
type sentPartition struct {
	tp          log.TopicPartition
	fetchOffset int64
	leaderEpoch int32
}

type sentKey struct {
	topicID   [16]byte
	partition int32
}

// buildFetch builds the Fetch request for the partitions ready to fetch,
// in the fetch session: an incremental request lists only what changed,
// but sent holds every partition fetched, since the answer may carry any
// of them. It returns nil and the earliest time a backed-off partition (fetching or
// truncating) is ready when there is nothing to fetch now.
func (f *fetcher) buildFetch() (*kmsg.FetchRequest, map[sentKey]sentPartition, time.Time) {
	cfg := f.m.cfg
	now := cfg.Now()
	quota := cfg.FollowerQuota
	f.mu.Lock()
	defer f.mu.Unlock()
	req := kmsg.NewPtrFetchRequest()
	// Up to v14 the replica id is ReplicaID, from v15 ReplicaState.ID; the
	// connection pins the version, so both are set.
	req.ReplicaID = f.m.localID
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.m.localID, -1
	req.MaxWaitMillis = int32(cfg.FetchWaitMax / time.Millisecond)
	req.MinBytes = cfg.FetchMinBytes
	req.MaxBytes = cfg.FetchResponseMaxBytes
	sent := map[sentKey]sentPartition{}
	var parts []sessionFetchPartition
	var next time.Time
	for tp, fp := range f.parts {
		if now.Before(fp.delayUntil) {
			if next.IsZero() || fp.delayUntil.Before(next) {
				next = fp.delayUntil
			}
			continue
		}
		if fp.truncate {
			continue
		}
		if quota.ShouldThrottle(tp.Topic, tp.Partition, fp.inSync) {
			// Left out until the rate falls, as Kafka's fetcher does, and
			// looked at again after replica.fetch.backoff.ms.
			if again := now.Add(cfg.FetchBackoff); next.IsZero() || again.Before(next) {
				next = again
			}
			continue
		}
		l := fp.p.log
		sp := sessionFetchPartition{
			key: sessionPartitionKey{topic: tp.Topic, topicID: fp.p.topicID, partition: tp.Partition},
			data: sessionPartitionData{
				fetchOffset: l.LogEndOffset(), logStartOffset: l.LogStartOffset(), maxBytes: cfg.FetchMaxBytes,
				currentLeaderEpoch: fp.leaderEpoch, lastFetchedEpoch: -1,
			},
		}
		parts = append(parts, sp)
		sent[sentKey{fp.p.topicID, tp.Partition}] = sentPartition{tp, sp.data.fetchOffset, fp.leaderEpoch}
	}
	if len(sent) == 0 {
		return nil, nil, next
	}
	var send []sessionFetchPartition
	var forget []sessionPartitionKey
	req.SessionID, req.SessionEpoch, send, forget = f.session.build(parts)
	topics := map[[16]byte]int{}
	for _, sp := range send {
		i, ok := topics[sp.key.topicID]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = sp.key.topic, sp.key.topicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[sp.key.topicID] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = sp.key.partition
		rp.CurrentLeaderEpoch = sp.data.currentLeaderEpoch
		rp.FetchOffset = sp.data.fetchOffset
		rp.LastFetchedEpoch = sp.data.lastFetchedEpoch
		rp.LogStartOffset = sp.data.logStartOffset
		rp.PartitionMaxBytes = sp.data.maxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	forgotten := map[[16]byte]int{}
	for _, k := range forget {
		i, ok := forgotten[k.topicID]
		if !ok {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = k.topic, k.topicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			i = len(req.ForgottenTopics) - 1
			forgotten[k.topicID] = i
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
	}
	return req, sent, next
}

// process applies a Fetch response: appends the records, follows the
// leader's HW and log start offset, and handles partition errors.
func (f *fetcher) process(resp *kmsg.FetchResponse, sent map[sentKey]sentPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			s, ok := sent[sentKey{rt.TopicID, rp.Partition}]
			if !ok {
				continue
			}
			fp := f.parts[s.tp]
			if fp == nil || fp.truncate || fp.leaderEpoch != s.leaderEpoch || fp.p.log.LogEndOffset() != s.fetchOffset {
				continue // the partition moved on while the fetch was out
			}
			f.processPartition(fp, rp)
			if quota := f.m.cfg.FollowerQuota; quota.IsThrottled(s.tp.Topic, s.tp.Partition) {
				quota.Record(int64(len(rp.RecordBatches)))
			}
		}
	}
}

func (f *fetcher) processPartition(fp *fetchPart, rp *kmsg.FetchResponseTopicPartition) {
	fp.follow(fp.p.ApplyFetched(rp, f.source, f.m.logger), f.m.cfg.Now(), f.m.cfg.FetchBackoff)
}
