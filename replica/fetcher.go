package replica

import (
	"context"
	"sync"
	"time"

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
	// steps builds the requests and applies the answers (fetcher_build.go);
	// its fetch session is the fetcher goroutine's only.
	steps *LeaderFetcher
	// list is partsLocked's answer, reused: it has an entry for each
	// partition, every fetch.
	list []FetchPartition
}

type fetchPart struct {
	p *Partition
	FetchPartitionState
}

// followed is a partition ApplyLeaderAndISR made a follower of leader at
// leaderEpoch.
type followed struct {
	p           *Partition
	leader      int32
	leaderEpoch int32
}

// addFetches starts fetching the partitions in fs, each leader's fetcher
// woken once with all of its partitions. A partition a log dir failure
// took offline since it was applied (MarkOffline) is left out.
func (m *Manager) addFetches(fs []followed) {
	if len(fs) == 0 {
		return
	}
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	woken := map[int32]*fetcher{}
	for _, fl := range fs {
		if !m.hosts(fl.p) {
			continue
		}
		f := m.fetchers[fl.leader]
		if f == nil {
			f = &fetcher{m: m, source: fl.leader, wake: make(chan struct{}, 1), parts: map[log.TopicPartition]*fetchPart{}, steps: m.NewLeaderFetcher(fl.leader, nil)}
			m.fetchers[fl.leader] = f
		}
		f.mu.Lock()
		f.parts[fl.p.tp] = &fetchPart{p: fl.p, FetchPartitionState: FetchPartitionState{LeaderEpoch: fl.leaderEpoch, Truncate: true}}
		f.mu.Unlock()
		woken[fl.leader] = f
	}
	for _, f := range woken {
		f.signal()
		if m.runCtx != nil && !f.started {
			m.startFetcherLocked(f)
		}
	}
}

// hosts reports whether p is still this manager's partition for its tp.
func (m *Manager) hosts(p *Partition) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.partitions[p.tp] == p
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
		fr, _ := resp.(*kmsg.FetchResponse)
		if err = f.steps.FetchAnswered(fr, err); err != nil {
			if ctx.Err() == nil {
				f.m.logger.Warn("replica fetch failed", "leader", f.source, "err", err)
			}
			f.sleep(ctx, cfg.FetchBackoff)
			continue
		}
		f.process(fr, sent)
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

// partsLocked lists the partitions f fetches, with their states, until
// its next call; f.mu is held.
func (f *fetcher) partsLocked() []FetchPartition {
	clear(f.list) // no removed partition is kept alive by the list
	parts := f.list[:0]
	for _, fp := range f.parts {
		parts = append(parts, FetchPartition{P: fp.p, State: &fp.FetchPartitionState})
	}
	f.list = parts
	return parts
}

// lookup finds a partition f still fetches; f.mu is held.
func (f *fetcher) lookup(tp log.TopicPartition) (FetchPartition, bool) {
	fp := f.parts[tp]
	if fp == nil {
		return FetchPartition{}, false
	}
	return FetchPartition{P: fp.p, State: &fp.FetchPartitionState}, true
}

// buildFetch builds the Fetch request for the partitions ready to fetch
// (LeaderFetcher.FetchRequest).
func (f *fetcher) buildFetch() (*kmsg.FetchRequest, FetchSent, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.steps.FetchRequest(f.partsLocked())
}

// process applies a Fetch response: appends the records, follows the
// leader's HW and log start offset, and handles partition errors.
func (f *fetcher) process(resp *kmsg.FetchResponse, sent FetchSent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps.ApplyFetchResponse(resp, sent, f.lookup)
}
