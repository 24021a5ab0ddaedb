package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
)

// TestRequestQueue: requests go one at a time in order; a failed head is
// not handed out again before its backoff ends, and is then resent.
func TestRequestQueue(t *testing.T) {
	var q requestQueue
	a, b := kmsg.NewPtrLeaderAndISRRequest(), kmsg.NewPtrUpdateMetadataRequest()
	answered := 0
	q.push(a, func(kmsg.Response, error) { answered++ })
	q.push(b, nil)
	if r, ok := q.next(); !ok || r != kmsg.Request(a) {
		t.Fatalf("first next: %v %v", r, ok)
	}
	if _, ok := q.next(); ok {
		t.Fatal("a second request while the first is in flight")
	}
	if done := q.answered(errors.New("lost")); done != nil {
		t.Fatal("a callback for a failed send")
	}
	if _, ok := q.next(); ok {
		t.Fatal("resent during the backoff")
	}
	q.retry()
	if r, ok := q.next(); !ok || r != kmsg.Request(a) {
		t.Fatalf("resend: %v %v", r, ok)
	}
	q.answered(nil)(nil, nil)
	if answered != 1 {
		t.Fatalf("callback ran %d times", answered)
	}
	if r, ok := q.next(); !ok || r != kmsg.Request(b) {
		t.Fatalf("second: %v %v", r, ok)
	}
	if done := q.answered(nil); done != nil {
		t.Fatal("a callback for a request without one")
	}
	if _, ok := q.next(); ok {
		t.Fatal("a request from an empty queue")
	}
}

// fakeEnv is a stepped controller's Env under the test's hand.
type fakeEnv struct {
	watches []fakeWatch
	sends   []fakeSend
	timers  []func()
	wakes   int
}

type fakeWatch struct {
	ch   <-chan store.Event
	fire func(store.Event)
}

type fakeSend struct {
	broker int32
	req    kmsg.Request
	done   func(kmsg.Response, error)
}

func (e *fakeEnv) Watch(ch <-chan store.Event, fire func(store.Event)) {
	e.watches = append(e.watches, fakeWatch{ch, fire})
}

func (e *fakeEnv) Send(broker int32, req kmsg.Request, done func(kmsg.Response, error)) {
	e.sends = append(e.sends, fakeSend{broker, req, done})
}

func (e *fakeEnv) After(_ time.Duration, f func()) { e.timers = append(e.timers, f) }
func (e *fakeEnv) Wake()                           { e.wakes++ }

// pump fires the watches whose event has come.
func (e *fakeEnv) pump() {
	kept := e.watches[:0]
	var fired []func()
	for _, w := range e.watches {
		select {
		case ev := <-w.ch:
			fired = append(fired, func() { w.fire(ev) })
		default:
			kept = append(kept, w)
		}
	}
	e.watches = kept
	for _, f := range fired {
		f()
	}
}

// takeSends returns the sends so far to broker and forgets them.
func (e *fakeEnv) takeSends(broker int32) []fakeSend {
	var out, kept []fakeSend
	for _, s := range e.sends {
		if s.broker == broker {
			out = append(out, s)
		} else {
			kept = append(kept, s)
		}
	}
	e.sends = kept
	return out
}

// TestSteppedController: a controller driven through its Env alone is
// elected, tells the brokers through its channels (one request in flight
// per broker, a lost one resent after the Env's timer), sees a broker go
// through a watch, and serves AlterPartition from a Step.
func TestSteppedController(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	sessions := registerBrokers(t, db, 1, 2)
	if res := CreateTopics(ctx, sessions[1], []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {2, 1}}}}, false); res[0].ErrorCode != 0 {
		t.Fatalf("create topic: %+v", res[0])
	}
	env := &fakeEnv{}
	c := NewStepped(Config{BrokerID: 1, DeleteTopicEnable: true}, sessions[1], env)
	won, _, err := c.TryElect(ctx)
	if err != nil || !won {
		t.Fatalf("elect: won %v err %v", won, err)
	}
	if err := c.StartTerm(ctx); err != nil {
		t.Fatal(err)
	}
	if !c.IsActive() || c.State().Live[2].ID != 2 {
		t.Fatalf("active %v, live %v", c.IsActive(), c.State().Live)
	}
	if len(env.watches) == 0 {
		t.Fatal("no watch armed through the Env")
	}

	// Broker 2 gets one request at a time; a lost one is resent after the timer.
	to2 := env.takeSends(2)
	if len(to2) != 1 {
		t.Fatalf("%d requests in flight to broker 2, want 1", len(to2))
	}
	first := to2[0]
	first.done(nil, errors.New("lost"))
	if got := env.takeSends(2); len(got) != 0 || len(env.timers) != 1 {
		t.Fatalf("resent before the backoff: %d sends, %d timers", len(got), len(env.timers))
	}
	env.timers[0]()
	env.timers = nil
	resent := env.takeSends(2)
	if len(resent) != 1 || resent[0].req != first.req {
		t.Fatalf("resend: %+v", resent)
	}
	resent[0].done(resent[0].req.ResponseKind(), nil)
	if next := env.takeSends(2); len(next) != 1 || next[0].req == first.req {
		t.Fatalf("after the answer: %+v", next)
	}

	// Broker 2 leaves: the watch fires, wakes the driver, and the Step sees it.
	if err := sessions[2].Close(); err != nil {
		t.Fatal(err)
	}
	wakes := env.wakes
	env.pump()
	if env.wakes == wakes {
		t.Fatal("the broker watch did not wake the driver")
	}
	if err := c.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.State().Live[2]; ok {
		t.Fatal("broker 2 still live after its registration went")
	}
	st := c.State().Topics["t"].States[0]
	if st.Leader != 1 {
		t.Fatalf("leader %d after broker 2 left, want 1", st.Leader)
	}

	// AlterPartition is served by the next Step, not before.
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID = 1
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = "t", c.State().Topics["t"].ID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.NewISR, rp.PartitionEpoch = 0, st.LeaderEpoch, []int32{1}, st.ZkVersion
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var resp *kmsg.AlterPartitionResponse
	c.AlterPartitionAsync(req, func(r *kmsg.AlterPartitionResponse) { resp = r })
	if resp != nil {
		t.Fatal("answered outside a Step")
	}
	if err := c.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if resp == nil || resp.ErrorCode != 0 {
		t.Fatalf("AlterPartition answer %+v", resp)
	}

	// Resigned, the controller answers at once, and its term's watches are dropped.
	c.Resign(ctx)
	c.AlterPartitionAsync(req, func(r *kmsg.AlterPartitionResponse) { resp = r })
	if resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("after resigning: error %d", resp.ErrorCode)
	}
}
