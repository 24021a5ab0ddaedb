package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol"
	"github.com/brook-mq/brook/protocol/batch"
)

// TestConnectionReusesWorkers sends requests one at a time on one
// connection, so that each starts the connection's applier (which writes
// the answer itself): it must run on a parked worker, not on a new
// goroutine (one per request, and one for the writer, before workers,
// each growing its stack from the start), and the parked workers must end
// with the broker.
func TestConnectionReusesWorkers(t *testing.T) {
	tb := startBroker(t, nil)
	c := dialProbe(t, tb.addr)
	c.roundTrip(apiVersionsRequest())
	w := tb.b.workers
	started := w.started.Load()
	const n = 200
	for range n {
		c.roundTrip(apiVersionsRequest())
	}
	// A worker still between its answer and parking when the next
	// request comes makes the broker start another: a few, not one per
	// request.
	if got := w.started.Load() - started; got > n/20 {
		t.Errorf("%d goroutines started for the appliers and writers of %d requests, want at most %d", got, n, n/20)
	}
	if idle := w.idle.Load(); idle > w.maxIdle {
		t.Errorf("%d workers parked, over %d", idle, w.maxIdle)
	}
	tb.stop()
	testutil.Eventually(t, 30*time.Second, func() error {
		if idle := w.idle.Load(); idle != 0 {
			return fmt.Errorf("%d workers still parked after the broker stopped", idle)
		}
		return nil
	})
}

// TestPanicWhileWaitingClosesConnection makes a request's wait panic on a
// worker: its connection is closed, as a handler's panic closes it, and
// the broker, its workers among them, goes on answering others.
func TestPanicWhileWaitingClosesConnection(t *testing.T) {
	tb := startBrokerWith(t, nil, func(b *Broker) {
		av := b.handlers[protocol.ApiVersionsKey]
		b.handlers[protocol.ApiVersionsKey] = handler{av.min, av.max, func(ctx context.Context, r *request, kr kmsg.Request) (reply, error) {
			if kr.(*kmsg.ApiVersionsRequest).ClientSoftwareName == "panic-in-wait" {
				return reply{wait: func() kmsg.Response { panic("a test's wait") }}, nil
			}
			return av.fn(ctx, r, kr)
		}}
	})
	c := dialProbe(t, tb.addr)
	req := apiVersionsRequest()
	req.ClientSoftwareName = "panic-in-wait"
	c.send(req)
	if err := c.closedByBroker(30 * time.Second); err != nil {
		t.Fatalf("connection whose wait panicked: %v", err)
	}
	for range 10 {
		dialProbe(t, tb.addr).roundTrip(apiVersionsRequest())
	}
}

// TestProduceAppliedByReader sends acks=1 produce requests one at a time
// on one connection: the reader applies each itself and, as the applier,
// writes the answer, so no job goes to a worker (two per request before:
// the applier's and the writer's), and every answer is the right one.
func TestProduceAppliedByReader(t *testing.T) {
	tb := startBroker(t, nil)
	const topic = "reader-applies"
	tb.createTopic(topic, 1, nil)
	tb.leaderOf(topic, 0)
	records, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()},
		[]batch.Record{{Value: []byte("v")}, {OffsetDelta: 1, Value: []byte("w")}}, tb.b.codecs)
	if err != nil {
		t.Fatal(err)
	}
	c := dialProbe(t, tb.addr)
	handed := tb.b.workers.handed.Load()
	const n = 50
	for i := range n {
		resp := c.roundTrip(produceV9(topic, records)).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(2*i) {
			t.Fatalf("produce %d: error %d, base offset %d, want 0 and %d", i, p.ErrorCode, p.BaseOffset, 2*i)
		}
	}
	// The broker's other connections (the test's admin client) may
	// hand a job or two meanwhile.
	if got := tb.b.workers.handed.Load() - handed; got > n/10 {
		t.Errorf("%d jobs handed to workers for %d produce requests, want at most %d", got, n, n/10)
	}
}

// TestWorkersReserveIdle checks that a worker finding maxIdle parked does
// not take a place, and that idle is never raised past maxIdle.
func TestWorkersReserveIdle(t *testing.T) {
	w := &workers{maxIdle: 2}
	for i := range 2 {
		if !w.reserveIdle() {
			t.Fatalf("reservation %d refused with %d of %d parked", i, w.idle.Load(), w.maxIdle)
		}
	}
	if w.reserveIdle() {
		t.Fatalf("reservation taken with %d of %d parked", w.idle.Load()-1, w.maxIdle)
	}
	if got := w.idle.Load(); got != w.maxIdle {
		t.Fatalf("idle %d after a refused reservation, want %d", got, w.maxIdle)
	}
}

// TestWriteHereOnlyLoneReadyAnswer checks the applier's choice to write
// itself: a ready answer queued behind one that waits (left by a writer
// that lost its place to the applier) goes to a worker, or the applier
// would wait for the earlier answer.
func TestWriteHereOnlyLoneReadyAnswer(t *testing.T) {
	c := &conn{out: make(chan *pending, maxInFlight)}
	ready := &pending{}
	c.out <- ready
	if !c.writeHere(ready) {
		t.Fatal("a lone ready answer is not written by the applier")
	}
	<-c.out
	waiting := &pending{done: make(chan struct{})}
	c.out <- waiting
	c.out <- ready
	if c.writeHere(ready) {
		t.Fatal("the applier writes a ready answer queued behind one that waits")
	}
	if c.writeHere(waiting) {
		t.Fatal("the applier writes an answer that waits")
	}
}

// TestApplyHereOnlyLoneProduce checks the reader's choice to apply a frame
// itself: not when older frames wait (left by an applier that lost its
// place to the reader; they may be of any kind, and may mute), and not
// for a raw SASL token that begins like a Produce.
func TestApplyHereOnlyLoneProduce(t *testing.T) {
	produce := []byte{0, produceKey, 0, 9, 0, 0, 0, 1}
	r := bufio.NewReader(bytes.NewReader(nil)) // nothing buffered
	now := time.Now().UnixNano()
	c := &conn{in: make(chan []byte, maxInFlight)}
	c.in <- produce
	if !c.applyHere(r, produce, now) {
		t.Fatal("the reader does not apply a lone Produce")
	}
	<-c.in
	older := []byte{0, fetchKey, 0, 12, 0, 0, 0, 2}
	c.in <- older
	c.in <- produce
	if c.applyHere(r, produce, now) {
		t.Fatal("the reader applies a Produce with an older frame queued before it")
	}
	<-c.in
	<-c.in
	c.sasl = &saslSession{phase: saslRawToken}
	c.in <- produce
	if c.applyHere(r, produce, now) {
		t.Fatal("the reader applies a raw SASL token as a Produce")
	}
}

// TestReaderHandsMutedFrameOn runs the reader's apply of a frame on a
// connection muted after applyHere looked (a fetch's throttle, known only
// when its wait ends): the reader does not wait the mute out, which would
// stop its reading, but hands the frame to a worker's applier.
func TestReaderHandsMutedFrameOn(t *testing.T) {
	b := &Broker{workers: newWorkers(), requests: newRequestQueue(maxInFlight, 1<<20)}
	defer b.workers.close()
	// Ended, so that the worker's applier drops the frame instead of
	// waiting out the mute and applying it: the test needs no socket.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &conn{b: b, ctx: ctx, cancel: cancel, slots: make(chan struct{}, maxInFlight), in: make(chan []byte, maxInFlight), out: make(chan *pending, maxInFlight)}
	frame := []byte{0, produceKey, 0, 9, 0, 0, 0, 1}
	if err := b.requests.enqueue(context.Background(), int64(len(frame))); err != nil {
		t.Fatal(err)
	}
	c.slots <- struct{}{}
	c.in <- frame
	c.applying.Store(true)
	c.appliers.Add(1)
	c.mute(time.Hour)
	c.applyLoop(ctx, cancel, true)
	c.appliers.Done()
	if got := b.workers.handed.Load(); got != 1 {
		t.Errorf("%d jobs handed to workers, want the muted frame's applier", got)
	}
	c.appliers.Wait()
	if len(c.in) != 0 || len(c.slots) != 0 {
		t.Errorf("%d frames and %d in-flight slots left after the applier ended", len(c.in), len(c.slots))
	}
}

// TestPanicInReaderAppliedProduce makes the Produce handler panic on the
// reader's own apply (applyHere): the connection is closed, as on an
// applier, no job goes to a worker for it, and the broker goes on
// answering new connections.
func TestPanicInReaderAppliedProduce(t *testing.T) {
	tb := startBrokerWith(t, nil, func(b *Broker) {
		p := b.handlers[produceKey]
		b.handlers[produceKey] = handler{p.min, p.max, func(context.Context, *request, kmsg.Request) (reply, error) {
			panic("a test's produce")
		}}
	})
	records, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()},
		[]batch.Record{{Value: []byte("v")}}, tb.b.codecs)
	if err != nil {
		t.Fatal(err)
	}
	c := dialProbe(t, tb.addr)
	handed := tb.b.workers.handed.Load()
	c.send(produceV9("panics", records))
	if err := c.closedByBroker(30 * time.Second); err != nil {
		t.Fatalf("connection whose produce panicked: %v", err)
	}
	if got := tb.b.workers.handed.Load() - handed; got != 0 {
		t.Errorf("%d jobs handed to workers for a produce the reader applies", got)
	}
	dialProbe(t, tb.addr).roundTrip(apiVersionsRequest())
}
