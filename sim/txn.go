package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/replica"
)

// The transactional workload: producers with a transactional id, each
// running one transaction at a time over the producer's partitions. The
// partitions' side is the real code: transactional batches through
// Partition.AppendAsLeaderInTerm (the log's producer state checks epochs
// and sequences and opens the transaction), markers through
// Partition.AppendTxnMarkerAsLeader (it closes the transaction, indexes an
// abort in the .txnindex and moves the last stable offset), both at
// acks=all, replicated and elected like every other record. The client
// and coordinator side is a model: the txn coordinator runs on goroutines
// (txn.Coordinator has no step form yet, see docs/architecture.md), so
// the producer here decides itself, as EndTxn would: commit when every
// batch was acknowledged (and 4 times in 5 then), else abort; then the
// markers are written at each partition's leader, resent until
// acknowledged, as the coordinator's marker sender does. Each transaction
// takes a new producer epoch (as a transaction version 2 producer does),
// so its sequences start at 0 and a stale request of the last one is
// fenced.

// txnProducerBase is the first transactional producer id.
const txnProducerBase = 1000

// txnDecideAfter is how long a producer waits for its batches' answers
// before it ends the transaction: far above the network's delay, so no
// request of the transaction is still in flight when its markers go out
// (a produce arriving after its marker would open a hanging transaction,
// which transaction version 2 exists to prevent).
const txnDecideAfter = time.Second

// markerRequestTimeout is the coordinator's wait for a WriteTxnMarkers answer.
const markerRequestTimeout = time.Second

type txnWorkload struct {
	c         *Cluster
	producers []*txnProducer
	// outcome is every decided transaction's decision by key: true commits.
	outcome map[string]bool
	// waits are markers waiting for acks=all, polled after every event.
	waits              []markerWait
	committed, aborted int
}

type txnProducer struct {
	id    int64
	epoch int16
	n     int
	cur   *openTxn
}

// openTxn is the producer's current transaction.
type openTxn struct {
	key   string
	seq   map[int32]int32
	parts []int32 // AddPartitionsToTxn, in order
	// batches is how many were sent; acked are those whose success came back.
	batches int
	acked   map[int]bool
	decided bool
	commit  bool
	// markers are the partitions whose marker is not acknowledged yet,
	// with the attempt sent last.
	markers map[int32]int
}

type markerWait struct {
	b    *Broker
	inc  int
	p    *replica.Partition
	end  int64
	term int32
	done func(error)
	err  error
}

func newTxnWorkload(c *Cluster) *txnWorkload {
	w := &txnWorkload{c: c, outcome: map[string]bool{}}
	for i := range c.cfg.Transactions {
		w.producers = append(w.producers, &txnProducer{id: txnProducerBase + int64(i), epoch: -1})
	}
	return w
}

// txnKey is the transaction of a record value written by this workload.
func txnKey(value string) (string, bool) {
	rest, ok := strings.CutPrefix(value, "txn-")
	if !ok {
		return "", false
	}
	// txn-<producer>.<n>-<batch>-<record>;
	key, _, _ := strings.Cut(rest, "-")
	return key, true
}

func (w *txnWorkload) schedule() {
	for _, tp := range w.producers {
		w.c.sched.After(w.c.sched.Between(time.Second, 2*time.Second), fmt.Sprintf("txn producer %d starts", tp.id), func() { w.begin(tp) })
	}
}

// stopping: the last transactions have time to end before the checks.
func (w *txnWorkload) stopping() bool {
	c := w.c
	return c.quiet && c.sched.Now().After(simStart.Add(c.cfg.Duration+c.cfg.Settle/2))
}

func (w *txnWorkload) begin(tp *txnProducer) {
	if w.stopping() {
		return
	}
	tp.epoch++
	tp.n++
	t := &openTxn{key: fmt.Sprintf("%d.%d", tp.id, tp.n), seq: map[int32]int32{}, acked: map[int]bool{}, markers: map[int32]int{}}
	tp.cur = t
	k := 1 + w.c.sched.Rand.Intn(3)
	at := time.Duration(0)
	for i := range k {
		w.c.sched.After(at, "~txn batch", func() { w.send(tp, t, i) })
		at += w.c.sched.Between(5*time.Millisecond, 30*time.Millisecond)
	}
	w.c.sched.After(at+txnDecideAfter, fmt.Sprintf("txn %s ends", t.key), func() { w.decide(tp, t) })
}

// send produces batch i of t to a partition, added to the transaction first.
func (w *txnWorkload) send(tp *txnProducer, t *openTxn, i int) {
	c := w.c
	part := c.sched.Rand.Int31n(c.cfg.Partitions)
	if t.seq[part] == 0 && !containsPart(t.parts, part) {
		t.parts = append(t.parts, part)
	}
	n := 1 + c.sched.Rand.Intn(2)
	var recs []batch.Record
	var values []string
	for j := range n {
		v := fmt.Sprintf("txn-%s-%d-%d;", t.key, i, j)
		values = append(values, v)
		recs = append(recs, batch.Record{OffsetDelta: int32(j), Value: []byte(v)})
	}
	seq := t.seq[part]
	t.seq[part] += int32(n)
	t.batches++
	data, err := batch.Build(batch.BuildOptions{BaseTimestamp: c.sched.Now().UnixMilli(), Transactional: true,
		Producer: &batch.Producer{ID: tp.id, Epoch: tp.epoch, BaseSequence: seq}}, recs, nil)
	if err != nil {
		c.fail("build transactional batch: %v", err)
		return
	}
	leaders := c.believedLeaders(part)
	if len(leaders) == 0 {
		return // never acknowledged: the transaction aborts
	}
	b := leaders[c.sched.Rand.Intn(len(leaders))]
	inc := b.incarnation
	c.net.Send(clientNode, b.id, "Produce (transactional)", func() {
		w.produce(b, inc, part, data, values, func() {
			c.net.Send(b.id, clientNode, "Produce (transactional) answer", func() { t.acked[i] = true })
		})
	})
}

func containsPart(parts []int32, part int32) bool {
	for _, p := range parts {
		if p == part {
			return true
		}
	}
	return false
}

// produce is the leader's side of a transactional acks=all Produce; the
// answer goes back once the last record is committed.
func (w *txnWorkload) produce(b *Broker, inc int, part int32, data []byte, values []string, acked func()) {
	c := w.c
	if !b.live(inc) {
		return
	}
	p := b.rm.Get(topic, part)
	if p == nil {
		return
	}
	info, term, err := p.AppendAsLeaderInTerm(data, -1, c.cfg.MinISR)
	if err != nil {
		return // NOT_LEADER, NOT_ENOUGH_REPLICAS, fenced, out of order: not acknowledged
	}
	for j, v := range values {
		off := info.FirstOffset + int64(j)
		a := pendingAck{b: b, inc: inc, part: part, offset: off, term: term, epoch: p.Log().LeaderEpochAt(off), value: v}
		if j == len(values)-1 {
			a.onAck = acked
		}
		c.inv.appended(a)
	}
}

// decide ends t: the decision is final once taken (the coordinator's
// PrepareCommit or PrepareAbort), then its markers go out.
func (w *txnWorkload) decide(tp *txnProducer, t *openTxn) {
	c := w.c
	t.decided = true
	t.commit = len(t.acked) == t.batches && c.sched.Chance(0.8)
	w.outcome[t.key] = t.commit
	c.sched.Tracef("txn %s decided: commit %v (%d of %d batches acknowledged, partitions %v)", t.key, t.commit, len(t.acked), t.batches, t.parts)
	if t.commit {
		w.committed++
	} else {
		w.aborted++
	}
	if len(t.parts) == 0 {
		w.finish(tp, t)
		return
	}
	for _, part := range t.parts {
		t.markers[part] = 0
	}
	for _, part := range t.parts {
		w.sendMarker(tp, t, part)
	}
}

// sendMarker sends t's marker for part to a broker that believes it leads
// part, again after an error or the request timeout, until acknowledged.
func (w *txnWorkload) sendMarker(tp *txnProducer, t *openTxn, part int32) {
	c := w.c
	if _, left := t.markers[part]; !left {
		return // acknowledged meanwhile
	}
	t.markers[part]++
	attempt := t.markers[part]
	retry := func(after time.Duration) {
		c.sched.After(after, "~txn marker retry", func() {
			if a, left := t.markers[part]; left && a == attempt {
				w.sendMarker(tp, t, part)
			}
		})
	}
	leaders := c.believedLeaders(part)
	if len(leaders) == 0 {
		retry(100 * time.Millisecond)
		return
	}
	retry(markerRequestTimeout)
	b := leaders[c.sched.Rand.Intn(len(leaders))]
	inc := b.incarnation
	m := log.TxnMarker{ProducerID: tp.id, ProducerEpoch: tp.epoch, Commit: t.commit}
	answer := func(err error) {
		c.net.Send(b.id, clientNode, "WriteTxnMarkers answer", func() {
			a, left := t.markers[part]
			switch {
			case !left:
			case err == nil: // any attempt's success: the marker is written
				delete(t.markers, part)
				if len(t.markers) == 0 {
					w.finish(tp, t)
				}
			case a == attempt:
				t.markers[part]++ // the timeout of this attempt no longer applies
				c.sched.After(100*time.Millisecond, "~txn marker retry", func() {
					if _, left := t.markers[part]; left {
						w.sendMarker(tp, t, part)
					}
				})
			}
		})
	}
	c.net.Send(clientNode, b.id, "WriteTxnMarkers", func() {
		if !b.live(inc) {
			return
		}
		p := b.rm.Get(topic, part)
		if p == nil {
			answer(errors.New("unknown partition"))
			return
		}
		info, term, err := p.AppendTxnMarkerAsLeader(m, c.cfg.MinISR)
		if err != nil {
			answer(err)
			return
		}
		w.waits = append(w.waits, markerWait{b: b, inc: inc, p: p, end: info.LastOffset + 1, term: term, done: answer})
	})
}

func (w *txnWorkload) finish(tp *txnProducer, t *openTxn) {
	if tp.cur != t {
		return
	}
	tp.cur = nil
	w.c.sched.Tracef("txn %s complete", t.key)
	w.c.sched.After(w.c.sched.Between(0, 200*time.Millisecond), "~txn begin", func() { w.begin(tp) })
}

// step completes the markers now committed, with the real WaitForCommit.
func (w *txnWorkload) step() {
	kept := w.waits[:0]
	var finished []markerWait
	for _, m := range w.waits {
		if !m.b.live(m.inc) {
			continue // the broker crashed: no answer, the sender times out
		}
		if err := m.p.WaitForCommit(w.c.inv.done, m.end, m.term, w.c.cfg.MinISR); errors.Is(err, context.Canceled) {
			kept = append(kept, m)
		} else {
			m.err = err
			finished = append(finished, m)
		}
	}
	w.waits = kept
	for _, m := range finished {
		m.done(m.err)
	}
}

// final: after the quiet phase no transaction is left open, and every
// partition's last stable offset has reached its high watermark (no
// hanging transaction holds read_committed consumers back).
func (w *txnWorkload) final() {
	c := w.c
	for _, tp := range w.producers {
		if t := tp.cur; t != nil {
			c.fail("txn %s still open after the quiet phase: decided %v, markers unacknowledged on %v", t.key, t.decided, t.markers)
			return
		}
	}
	for part := range c.cfg.Partitions {
		ps, ok := c.inv.storedState(part)
		if !ok || ps.Leader < 0 {
			continue // invariants.final reports it
		}
		p := c.brokers[ps.Leader-1].rm.Get(topic, part)
		if p == nil {
			continue
		}
		if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso != hw {
			c.fail("p%d: last stable offset %d below the HW %d after every transaction ended (leader %d)", part, lso, hw, ps.Leader)
			return
		}
	}
}
