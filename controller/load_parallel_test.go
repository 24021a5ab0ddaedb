package controller

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brook-mq/brook/controller/store"
)

// pairedStateReads holds the first two partition state reads until both
// are in flight, which one read after the other could never do.
type pairedStateReads struct {
	Store
	calls    atomic.Int32
	both     chan struct{}
	once     sync.Once
	timedOut atomic.Bool
}

func (s *pairedStateReads) Get(ctx context.Context, path string) ([]byte, store.Stat, error) {
	if strings.HasSuffix(path, "/state") {
		switch s.calls.Add(1) {
		case 1:
			s.wait()
		case 2:
			s.once.Do(func() { close(s.both) })
			s.wait()
		}
	}
	return s.Store.Get(ctx, path)
}

func (s *pairedStateReads) wait() {
	select {
	case <-s.both:
	case <-time.After(30 * time.Second):
		s.timedOut.Store(true)
	}
}

// TestNewControllerReadsStatesInParallel: a controller taking over reads
// the partition states of a topic with several reads in flight (a
// failover of many partitions otherwise waits on one round trip each),
// and then leads every partition as before.
func TestNewControllerReadsStatesInParallel(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	first := startController(t, db, 1, f, Config{})
	if _, err := RegisterBroker(ctx, first.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "first controller active", f, first.c.IsActive)
	if res := CreateTopics(ctx, first.sess, []TopicSpec{{Name: "t", NumPartitions: 8, ReplicationFactor: 1}}, false); res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	f.waitFor(t, "LeaderAndISR for t", func(s []sentReq) bool { return hasLeaderAndISR(s, 1, "t", 8) })
	first.stop()
	if err := <-first.done; err != nil {
		t.Fatalf("first controller: %v", err)
	}
	first.done <- nil // for the cleanup

	g := &pairedStateReads{Store: db.NewSession(), both: make(chan struct{})}
	f2 := newFakeSender()
	ctx2, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	c := New(Config{BrokerID: 2}, g, f2)
	go func() { done <- c.Run(ctx2) }()
	defer func() { cancel(); <-done }()
	f2.waitFor(t, "the new controller's LeaderAndISR for t", func(s []sentReq) bool { return hasLeaderAndISR(s, 1, "t", 8) })
	if g.timedOut.Load() {
		t.Fatal("the new controller read the partition states one at a time")
	}
}
