package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/internal/testutil"
)

// fakeSender records every request and answers successfully.
type fakeSender struct {
	mu     sync.Mutex
	sent   []sentReq
	notify chan struct{} // cap 1: something was sent
}

type sentReq struct {
	broker int32
	req    kmsg.Request
}

func newFakeSender() *fakeSender { return &fakeSender{notify: make(chan struct{}, 1)} }

func (f *fakeSender) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	f.mu.Lock()
	f.sent = append(f.sent, sentReq{broker, req})
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
	resp := req.ResponseKind()
	if sr, ok := req.(*kmsg.StopReplicaRequest); ok {
		r := resp.(*kmsg.StopReplicaResponse)
		for _, t := range sr.Topics {
			for _, p := range t.PartitionStates {
				r.Partitions = append(r.Partitions, kmsg.StopReplicaResponsePartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	}
	return resp, nil
}

func (f *fakeSender) snapshot() []sentReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// waitFor polls the recorded requests until cond holds, waking on each send
// and giving up at a deadline.
func (f *fakeSender) waitFor(t *testing.T, what string, cond func([]sentReq) bool) []sentReq {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s := f.snapshot()
		if cond(s) {
			return s
		}
		select {
		case <-f.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; sent %d requests", what, len(s))
		}
	}
}

// eventually polls a store-side condition with a deadline, waking on sends
// (every controller write is followed by a send) and on a short ticker.
func eventually(t *testing.T, what string, f *fakeSender, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-f.notify:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type runningController struct {
	c    *Controller
	sess *store.Session
	done chan error
	stop context.CancelFunc
}

func startController(t *testing.T, db *store.DB, id int32, sender Sender, cfg Config) *runningController {
	t.Helper()
	sess := db.NewSession()
	cfg.BrokerID = id
	cfg.DeleteTopicEnable = true
	ctx, cancel := context.WithCancel(context.Background())
	rc := &runningController{c: New(cfg, sess, sender), sess: sess, done: make(chan error, 1), stop: cancel}
	go func() { rc.done <- rc.c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-rc.done
	})
	return rc
}

func lastOf[T kmsg.Request](reqs []sentReq, broker int32) (T, bool) {
	var zero T
	for i := len(reqs) - 1; i >= 0; i-- {
		if r, ok := reqs[i].req.(T); ok && reqs[i].broker == broker {
			return r, true
		}
	}
	return zero, false
}

func hasLeaderAndISR(reqs []sentReq, broker int32, topic string, nParts int) bool {
	for _, s := range reqs {
		r, ok := s.req.(*kmsg.LeaderAndISRRequest)
		if !ok || s.broker != broker {
			continue
		}
		for _, ts := range r.TopicStates {
			if ts.Topic == topic && len(ts.PartitionStates) == nParts {
				return true
			}
		}
	}
	return false
}

func TestControllerCreateAndDeleteTopic(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	epoch, err := RegisterBroker(ctx, rc.sess, plaintext(1))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "controller active", f, rc.c.IsActive)
	if rc.c.ActiveID() != 1 {
		t.Fatalf("active id %d", rc.c.ActiveID())
	}

	res := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "t", NumPartitions: 3, ReplicationFactor: 1, Configs: map[string]string{"cleanup.policy": "compact"}}}, false)
	if res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	sent := f.waitFor(t, "LeaderAndISR for t", func(s []sentReq) bool { return hasLeaderAndISR(s, 1, "t", 3) })
	var lai *kmsg.LeaderAndISRRequest
	for _, s := range sent {
		if r, ok := s.req.(*kmsg.LeaderAndISRRequest); ok && len(r.TopicStates) > 0 && r.TopicStates[0].Topic == "t" {
			lai = r
		}
	}
	if lai.ControllerID != 1 || lai.ControllerEpoch != 1 || lai.BrokerEpoch != epoch || lai.Version != LeaderAndISRVersion {
		t.Fatalf("LeaderAndISR header %+v (broker epoch %d)", lai, epoch)
	}
	ts := lai.TopicStates[0]
	if ts.TopicID != res[0].TopicID {
		t.Fatalf("topic id %x, want %x", ts.TopicID, res[0].TopicID)
	}
	for i, p := range ts.PartitionStates {
		if p.Partition != int32(i) || p.Leader != 1 || p.LeaderEpoch != 0 || !p.IsNew || !reflect.DeepEqual(p.ISR, []int32{1}) || !reflect.DeepEqual(p.Replicas, []int32{1}) || p.ControllerEpoch != 1 {
			t.Fatalf("partition state %+v", p)
		}
	}
	sent = f.waitFor(t, "UpdateMetadata for t", func(s []sentReq) bool {
		um, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1)
		return ok && len(um.TopicStates) == 1 && um.TopicStates[0].Topic == "t"
	})
	um, _ := lastOf[*kmsg.UpdateMetadataRequest](sent, 1)
	if len(um.LiveBrokers) != 1 || um.LiveBrokers[0].ID != 1 || um.LiveBrokers[0].Endpoints[0].Port != 9093 || len(um.TopicStates[0].PartitionStates) != 3 {
		t.Fatalf("UpdateMetadata %+v", um)
	}
	data, stat, err := rc.sess.Get(ctx, PartitionStatePath("t", 2))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}` || stat.Version != 0 {
		t.Fatalf("state znode %s %+v", data, stat)
	}
	if d, _, _ := rc.sess.Get(ctx, ControllerEpochPath); string(d) != "1" {
		t.Fatalf("controller epoch %q", d)
	}

	// Delete: StopReplica(delete) for every partition, then the znodes go.
	if r := DeleteTopics(ctx, rc.sess, []string{"t"}); r[0].ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	sent = f.waitFor(t, "StopReplica", func(s []sentReq) bool { _, ok := lastOf[*kmsg.StopReplicaRequest](s, 1); return ok })
	sr, _ := lastOf[*kmsg.StopReplicaRequest](sent, 1)
	if len(sr.Topics) != 1 || sr.Topics[0].Topic != "t" || len(sr.Topics[0].PartitionStates) != 3 || sr.BrokerEpoch != epoch {
		t.Fatalf("StopReplica %+v", sr)
	}
	for _, p := range sr.Topics[0].PartitionStates {
		if !p.Delete || p.LeaderEpoch != EpochDuringDelete {
			t.Fatalf("StopReplica partition %+v", p)
		}
	}
	eventually(t, "topic znodes removed", f, func() bool {
		for _, p := range []string{TopicPath("t"), TopicConfigPath("t"), DeleteTopicPath("t")} {
			if ok, _, _ := rc.sess.Exists(ctx, p); ok {
				return false
			}
		}
		return true
	})
	// The UpdateMetadata sent before StopReplica marks the partitions deleted.
	var sawDelete bool
	for _, s := range f.snapshot() {
		if r, ok := s.req.(*kmsg.UpdateMetadataRequest); ok {
			for _, ts := range r.TopicStates {
				if ts.Topic == "t" && ts.PartitionStates[0].Leader == LeaderDuringDelete {
					sawDelete = true
				}
			}
		}
	}
	if !sawDelete {
		t.Fatal("no UpdateMetadata with leader -2 for the deleted topic")
	}

	// Re-creating the topic works and gets a new id.
	res2 := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if res2[0].ErrorCode != 0 || res2[0].TopicID == res[0].TopicID {
		t.Fatalf("re-create %+v", res2)
	}
	f.waitFor(t, "LeaderAndISR for re-created t", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.LeaderAndISRRequest](s, 1)
		return ok && len(r.TopicStates) == 1 && r.TopicStates[0].TopicID == res2[0].TopicID
	})

	// New partitions through CreatePartitions are started too.
	if code, msg := CreatePartitions(ctx, rc.sess, "t", 3, nil, false); code != 0 {
		t.Fatalf("create partitions: %d %s", code, msg)
	}
	f.waitFor(t, "LeaderAndISR for new partitions", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.LeaderAndISRRequest](s, 1)
		return ok && len(r.TopicStates) == 1 && len(r.TopicStates[0].PartitionStates) == 2 && r.TopicStates[0].PartitionStates[0].Partition == 1
	})
}

func TestControllerBrokerFailureAndReturn(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	others := registerBrokers(t, db, 2, 3)
	eventually(t, "controller active", f, rc.c.IsActive)
	// A topic created before the controller sees 2 and 3 starts with 1,
	// the only live replica, as its leader, and the failure below is not
	// the leader's.
	f.waitFor(t, "UpdateMetadata with brokers 1, 2 and 3", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1)
		return ok && len(r.LiveBrokers) == 3
	})
	res := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "r", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {2, 3, 1}}}}, false)
	if res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	f.waitFor(t, "LeaderAndISR to broker 3", func(s []sentReq) bool { return hasLeaderAndISR(s, 3, "r", 1) })

	// Broker 2, the leader, dies: 3 leads, ISR shrinks, epoch 1.
	others[2].Close()
	eventually(t, "new leader", f, func() bool {
		d, _, err := rc.sess.Get(ctx, PartitionStatePath("r", 0))
		return err == nil && string(d) == `{"controller_epoch":1,"leader":3,"version":1,"leader_epoch":1,"isr":[3,1]}`
	})
	f.waitFor(t, "LeaderAndISR with the new leader to 1 and 3", func(s []sentReq) bool {
		for _, b := range []int32{1, 3} {
			r, ok := lastOf[*kmsg.LeaderAndISRRequest](s, b)
			if !ok || len(r.TopicStates) == 0 || r.TopicStates[0].PartitionStates[0].Leader != 3 || r.TopicStates[0].PartitionStates[0].ZKVersion != 1 {
				return false
			}
		}
		return true
	})
	f.waitFor(t, "UpdateMetadata without broker 2", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1)
		return ok && len(r.LiveBrokers) == 2
	})

	// Broker 2 returns: it gets the full metadata and its replica's state.
	before := len(f.snapshot())
	s2 := db.NewSession()
	epoch2, err := RegisterBroker(ctx, s2, plaintext(2))
	if err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "requests to returning broker 2", func(s []sentReq) bool {
		var gotLAI, gotUM bool
		for _, r := range s[before:] {
			if r.broker != 2 {
				continue
			}
			switch req := r.req.(type) {
			case *kmsg.LeaderAndISRRequest:
				gotLAI = req.BrokerEpoch == epoch2 && len(req.TopicStates) == 1 && req.TopicStates[0].PartitionStates[0].Leader == 3
			case *kmsg.UpdateMetadataRequest:
				gotUM = len(req.LiveBrokers) == 3 && len(req.TopicStates) == 1
			}
		}
		return gotLAI && gotUM
	})
}

func TestControllerElectionFailover(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f1, f2 := newFakeSender(), newFakeSender()
	a := startController(t, db, 1, f1, Config{})
	b := startController(t, db, 2, f2, Config{})
	if _, err := RegisterBroker(ctx, a.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterBroker(ctx, b.sess, plaintext(2)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one controller", f1, func() bool {
		return a.c.IsActive() != b.c.IsActive() && a.c.ActiveID() == b.c.ActiveID() && a.c.ActiveID() > 0
	})
	winner, loser := a, b
	if b.c.IsActive() {
		winner, loser = b, a
	}
	loserID := int32(1)
	if loser == b {
		loserID = 2
	}
	// The winner's session ends (a crashed broker): Run reports it and the
	// other broker takes over with the next epoch.
	winner.sess.Close()
	select {
	case err := <-winner.done:
		if !errors.Is(err, store.ErrSessionExpired) {
			t.Fatalf("winner's Run returned %v", err)
		}
		winner.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("winner's Run did not return")
	}
	eventually(t, "failover", f1, func() bool { return loser.c.IsActive() && loser.c.ActiveID() == loserID })
	if d, _, _ := loser.sess.Get(ctx, ControllerEpochPath); string(d) != "2" {
		t.Fatalf("controller epoch %q, want 2", d)
	}
	d, _, _ := loser.sess.Get(ctx, ControllerPath)
	if want := fmt.Sprintf(`"brokerid":%d`, loserID); !strings.Contains(string(d), want) || !strings.Contains(string(d), `"version":2`) || !strings.Contains(string(d), `"kraftControllerEpoch":-1`) {
		t.Fatalf("controller znode %s", d)
	}

	// A clean stop (ctx done) also hands over: the znode is deleted at once.
	c := startController(t, db, 3, newFakeSender(), Config{})
	loser.stop()
	if err := <-loser.done; err != nil {
		t.Fatalf("Run after stop: %v", err)
	}
	loser.done <- nil
	eventually(t, "handover after stop", f1, c.c.IsActive)
}

// A deposed controller must not be able to write: its epoch check fails.
func TestStaleControllerFenced(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	s := db.NewSession()
	if _, err := RegisterBroker(ctx, s, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	c := New(Config{BrokerID: 1}, s, newFakeSender())
	won, _, err := c.tryElect(ctx)
	if err != nil || !won {
		t.Fatalf("elect: %v %v", won, err)
	}
	// Another controller bumps the epoch (as after our session expired).
	if _, err := s.Set(ctx, ControllerEpochPath, []byte("2"), store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	err = c.writeStates(ctx, []StateWrite{{TP: TP{"x", 0}, State: PartitionState{Leader: 1}, Create: true}}, nil)
	if !errors.Is(err, errLostControl) {
		t.Fatalf("write by stale controller: %v", err)
	}
	if ok, _, _ := s.Exists(ctx, PartitionStatePath("x", 0)); ok {
		t.Fatal("stale controller wrote a state")
	}
}

// A topic znode that cannot be decoded is skipped, not fatal, and picked
// up once repaired.
func TestControllerSkipsUnreadableTopic(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.sess.Create(ctx, TopicPath("bad"), []byte("{not json"), 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "controller active", f, rc.c.IsActive)
	if r := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "good", NumPartitions: 1, ReplicationFactor: 1}}, false); r[0].ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	f.waitFor(t, "LeaderAndISR for good", func(s []sentReq) bool { return hasLeaderAndISR(s, 1, "good", 1) })
	if _, err := rc.sess.Set(ctx, TopicPath("bad"), encodeTopic(TopicAssignment{TopicID: RandomUUID(), Partitions: map[int32][]int32{0: {1}}}), store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "LeaderAndISR for the repaired topic", func(s []sentReq) bool { return hasLeaderAndISR(s, 1, "bad", 1) })
}

// Run leaves no goroutine behind once it returns (watch forwarders, broker
// channels).
func TestControllerStopsItsGoroutines(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	sess := db.NewSession()
	if _, err := RegisterBroker(ctx, sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	registerBrokers(t, db, 2)
	before := runtime.NumGoroutine()
	f := newFakeSender()
	c := New(Config{BrokerID: 1, DeleteTopicEnable: true}, sess, f)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	eventually(t, "active", f, c.IsActive)
	CreateTopics(ctx, sess, []TopicSpec{{Name: "g", NumPartitions: 4, ReplicationFactor: 2}}, false)
	f.waitFor(t, "LeaderAndISR", func(s []sentReq) bool { return hasLeaderAndISR(s, 2, "g", 2) || hasLeaderAndISR(s, 2, "g", 4) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > before {
			return fmt.Errorf("%d goroutines, %d before Run", n, before)
		}
		return nil
	})
}

// blockingSender never answers requests to the brokers in block (until the
// request's context ends), and answers the others like fakeSender.
type blockingSender struct {
	*fakeSender
	mu    sync.Mutex
	block map[int32]bool
}

func (b *blockingSender) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	b.mu.Lock()
	blocked := b.block[broker]
	b.mu.Unlock()
	if blocked {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return b.fakeSender.Send(ctx, broker, req)
}

// A deletion waiting on a broker that restarts (its queued StopReplica lost
// with its old channel) is started over and completes.
func TestDeletionSurvivesReplicaRestart(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := &blockingSender{fakeSender: newFakeSender(), block: map[int32]bool{}}
	rc := startController(t, db, 1, f, Config{})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	others := registerBrokers(t, db, 2)
	eventually(t, "controller active", f.fakeSender, rc.c.IsActive)
	if r := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "d", NumPartitions: 1, ReplicationFactor: 2}}, false); r[0].ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	f.waitFor(t, "LeaderAndISR to 2", func(s []sentReq) bool { return hasLeaderAndISR(s, 2, "d", 1) })
	f.mu.Lock()
	f.block[2] = true
	f.mu.Unlock()
	if r := DeleteTopics(ctx, rc.sess, []string{"d"}); r[0].ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	f.waitFor(t, "StopReplica to 1", func(s []sentReq) bool { _, ok := lastOf[*kmsg.StopReplicaRequest](s, 1); return ok })
	// Broker 2 restarts and answers again.
	f.mu.Lock()
	f.block[2] = false
	f.mu.Unlock()
	others[2].Close()
	registerBrokers(t, db, 2)
	eventually(t, "topic deleted", f.fakeSender, func() bool {
		ok, _, err := rc.sess.Exists(ctx, TopicPath("d"))
		return err == nil && !ok
	})
}
