package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestRemoteHighWatermarksCacheAndBound checks the cost of lag for
// partitions led elsewhere: answers are shared for remoteHWTTL, a leader
// that does not answer holds one request (not one per scrape) and a scrape
// returns without its answer, which fills the cache once it comes.
func TestRemoteHighWatermarksCacheAndBound(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1000, 0))
	var asked [3]atomic.Int32
	release := make(chan struct{})
	r := newRemoteHighWatermarks(clock.Now, func(ctx context.Context, leader int32, tps []topicPartition) (map[topicPartition]int64, error) {
		asked[leader].Add(1)
		if leader == 2 {
			<-release // a leader that hangs
		}
		out := map[topicPartition]int64{}
		for _, tp := range tps {
			out[tp] = int64(100*leader) + int64(tp.partition)
		}
		return out, nil
	})
	a, b := topicPartition{"t", 0}, topicPartition{"t", 1}
	byLeader := map[int32][]topicPartition{1: {a}, 2: {b}}

	r.refresh(map[int32][]topicPartition{1: {a}}, time.Minute)
	if hw, ok := r.get(a); !ok || hw != 100 {
		t.Fatalf("t-0 = %d %v, want 100", hw, ok)
	}
	// The hanging leader costs a scrape the wait, no more; within the TTL
	// leader 1 is not asked again, and while leader 2's request is in
	// flight no second one starts.
	clock.Advance(remoteHWTTL / 2)
	r.refresh(byLeader, 10*time.Millisecond)
	if _, ok := r.get(b); ok {
		t.Fatal("t-1 known before its leader answered")
	}
	r.refresh(byLeader, 10*time.Millisecond)
	if n1, n2 := asked[1].Load(), asked[2].Load(); n1 != 1 || n2 != 1 {
		t.Fatalf("asked leader 1 %d times, leader 2 %d times; want 1, 1", n1, n2)
	}
	close(release)
	r.wait()
	if hw, ok := r.get(b); !ok || hw != 201 {
		t.Fatalf("t-1 = %d %v, want 201", hw, ok)
	}
	// Past the TTL both are asked again; past the max age a value that
	// was not refreshed is dropped.
	clock.Advance(remoteHWTTL)
	r.refresh(byLeader, time.Minute)
	if n1, n2 := asked[1].Load(), asked[2].Load(); n1 != 2 || n2 != 2 {
		t.Fatalf("asked leader 1 %d times, leader 2 %d times; want 2, 2", n1, n2)
	}
	clock.Advance(remoteHWMaxAge + time.Second)
	if _, ok := r.get(a); ok {
		t.Fatal("t-0 kept past remoteHWMaxAge")
	}
}
