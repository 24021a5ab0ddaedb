package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator serves kafka_consumergroup_lag for every partition
// a group committed, but knows the high watermark only of the partitions it
// leads. For the others it asks their leaders with ListOffsets (latest,
// read_uncommitted: the high watermark), as kafka_exporter and
// kafka-consumer-groups do; a follower's own high watermark trails the
// leader's by a fetch, so it is not used. The answers are cached for
// remoteHWTTL, so that several scrapers share one round trip per leader,
// and a scrape waits at most remoteHWScrapeWait for them: a slow or dead
// leader costs a scrape that long, after which its partitions show the
// cached value (at most remoteHWMaxAge old) or no lag.
const (
	remoteHWTTL        = 2 * time.Second
	remoteHWMaxAge     = 30 * time.Second
	remoteHWScrapeWait = 500 * time.Millisecond
	// remoteHWRequestTimeout bounds a ListOffsets to one leader, which
	// outlives the scrape that started it; its answer fills the cache for
	// the next one.
	remoteHWRequestTimeout = 5 * time.Second
)

// askHighWatermarks sends one ListOffsets to leader for tps and returns the
// high watermark of each partition it answered without error.
type askHighWatermarks func(ctx context.Context, leader int32, tps []topicPartition) (map[topicPartition]int64, error)

type topicPartition struct {
	topic     string
	partition int32
}

type remoteHW struct {
	hw int64
	at time.Time
}

// remoteHighWatermarks caches the high watermarks of partitions led by
// other brokers. At most one request per leader is in flight, so a scrape
// storm against a slow leader holds one goroutine and one connection.
type remoteHighWatermarks struct {
	now func() time.Time
	ask askHighWatermarks

	mu       sync.Mutex
	cache    map[topicPartition]remoteHW
	inflight map[int32]chan struct{}
	wg       sync.WaitGroup
}

func newRemoteHighWatermarks(now func() time.Time, ask askHighWatermarks) *remoteHighWatermarks {
	return &remoteHighWatermarks{now: now, ask: ask, cache: map[topicPartition]remoteHW{}, inflight: map[int32]chan struct{}{}}
}

// refresh asks the leaders (byLeader) of partitions whose cached value is
// older than remoteHWTTL, and waits until they answered or wait passed.
func (r *remoteHighWatermarks) refresh(byLeader map[int32][]topicPartition, wait time.Duration) {
	now := r.now()
	var pending []chan struct{}
	r.mu.Lock()
	for tp, e := range r.cache {
		if now.Sub(e.at) > remoteHWMaxAge {
			delete(r.cache, tp) // a partition no group commits any more
		}
	}
	for leader, tps := range byLeader {
		if done, ok := r.inflight[leader]; ok {
			pending = append(pending, done)
			continue
		}
		stale := tps[:0:0]
		for _, tp := range tps {
			if e, ok := r.cache[tp]; !ok || now.Sub(e.at) >= remoteHWTTL {
				stale = append(stale, tp)
			}
		}
		if len(stale) == 0 {
			continue
		}
		done := make(chan struct{})
		r.inflight[leader] = done
		pending = append(pending, done)
		r.wg.Go(func() { r.fetch(leader, stale, done) })
	}
	r.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, done := range pending {
		select {
		case <-done:
		case <-timer.C:
			return
		}
	}
}

func (r *remoteHighWatermarks) fetch(leader int32, tps []topicPartition, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteHWRequestTimeout)
	defer cancel()
	hws, err := r.ask(ctx, leader, tps)
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		for tp, hw := range hws {
			r.cache[tp] = remoteHW{hw: hw, at: at}
		}
	}
	delete(r.inflight, leader)
	close(done)
}

// get returns tp's cached high watermark if it is at most remoteHWMaxAge old.
func (r *remoteHighWatermarks) get(tp topicPartition) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.cache[tp]
	if !ok || r.now().Sub(e.at) > remoteHWMaxAge {
		return 0, false
	}
	return e.hw, true
}

// wait waits for the requests in flight, each bounded by
// remoteHWRequestTimeout, so that none outlives the broker.
func (r *remoteHighWatermarks) wait() { r.wg.Wait() }

// askLeaderHighWatermarks is askHighWatermarks over the inter-broker
// listener, on a connection of its own so that a scrape never queues
// behind replication or controller requests.
func (b *Broker) askLeaderHighWatermarks(ctx context.Context, leader int32, tps []topicPartition) (map[topicPartition]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, 0
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tp.partition, listLatest, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	r, err := b.peers.Request(ctx, leader, "metrics", req)
	if err != nil {
		return nil, fmt.Errorf("high watermarks from leader %d: %w", leader, err)
	}
	out := make(map[topicPartition]int64, len(tps))
	for _, rt := range r.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			// NOT_LEADER_OR_FOLLOWER and the like: leadership moved since
			// the metadata was read; the next scrape asks the new leader.
			if kerr.ErrorForCode(rp.ErrorCode) == nil {
				out[topicPartition{rt.Topic, rp.Partition}] = rp.Offset
			}
		}
	}
	return out, nil
}
