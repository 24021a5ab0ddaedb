package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
)

// The plain producer is idempotent, as a Kafka client with
// enable.idempotence=true (the Java producer's and franz-go's default):
// one producer id, batches with per-partition sequence numbers, at most
// one batch in flight per partition (max.in.flight.requests.per.connection
// 1: ordering then needs no sequence resolution across in-flight batches).
// A batch whose answer is lost, late or a retriable error
// (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS) is sent again unchanged,
// same epoch and sequence, to a broker that believes it leads the
// partition then, until it is acknowledged. The leader's log (its
// producer state, replicated to the followers) answers a batch it already
// holds as a duplicate with the original offsets, which counts as the
// acknowledgement. OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID (the
// partition lost the producer's last batches: a power failure, or an
// election of a replica without them) fails the batch unacknowledged and
// bumps the epoch, as the Java producer's TransactionManager does for an
// idempotent producer since KIP-360 (bumpIdempotentProducerEpoch: the
// epoch goes up by one locally, without InitProducerId, and the failed
// partition's sequences start again at 0; every other partition starts
// the new epoch at 0 too, as the broker requires of a new epoch). Here
// the bump waits until no batch is in flight, so no batch of the old
// epoch is resent after it.
//
// Invariants (final): no record of the producer is in any replica's log
// twice below its HW, and an acknowledged record is at the offset its
// answer gave (invariants.final checks it is there).

// idemProducerID is the producer's id, below the transaction
// coordinators' allocations (txnProducerBase): the simulation's
// allocation, as the broker's id block would hand one.
const idemProducerID = 1

// idemMaxBatch is the most records a batch takes of those waiting (the
// client's batch.size, in records).
const idemMaxBatch = 8

// idemRequestTimeout is the producer's wait for an answer before it sends
// the batch again; idemRetryBackoff its retry.backoff.ms.
const (
	idemRequestTimeout = time.Second
	idemRetryBackoff   = 100 * time.Millisecond
)

type idemProducer struct {
	c     *Cluster
	epoch int16
	parts map[int32]*idemPart
	// bump: a batch failed with a sequence error; the epoch goes up once
	// no batch is in flight, and no batch starts until then.
	bump bool
	// ackedAt is the offset each acknowledged record's answer gave;
	// lostAcks are the records power failures took after their commit
	// (durability.go), whose offsets are no longer checked: another
	// attempt of their batch may survive elsewhere.
	ackedAt  map[string]int64
	lostAcks map[string]bool
	// scans are where each leader term's log was checked for duplicates.
	scans map[hwKey]*idemScan
	// retries, duplicates and bumps count the resends, the answers that
	// were duplicates and the epoch bumps.
	retries, duplicates, bumps int
}

// idemScan is a leader term's log checked below hw: the offset of each
// record of the producer there.
type idemScan struct {
	hw int64
	at map[string]int64
}

type idemPart struct {
	part  int32
	seq   int32 // the next batch's sequence
	queue []string
	cur   *idemBatch // in flight, nil when none
}

type idemBatch struct {
	values   []string
	epoch    int16
	seq      int32
	attempts int
}

func newIdemProducer(c *Cluster) *idemProducer {
	return &idemProducer{c: c, parts: map[int32]*idemPart{}, ackedAt: map[string]int64{}, lostAcks: map[string]bool{}, scans: map[hwKey]*idemScan{}}
}

func (w *idemProducer) partition(part int32) *idemPart {
	pp := w.parts[part]
	if pp == nil {
		pp = &idemPart{part: part}
		w.parts[part] = pp
	}
	return pp
}

// schedule produces one record every 5-30 ms of virtual time to a random
// partition.
func (w *idemProducer) schedule() {
	c := w.c
	n := 0
	var next func()
	next = func() {
		if w.stopped() {
			return
		}
		part := c.sched.Rand.Int31n(c.cfg.Partitions)
		n++
		pp := w.partition(part)
		pp.queue = append(pp.queue, fmt.Sprintf("value-%08d;", n))
		w.startNext(pp)
		c.sched.After(c.sched.Between(5*time.Millisecond, 30*time.Millisecond), "~producer", next)
	}
	c.sched.After(time.Second, "~producer", next)
}

// stopped: halfway through the quiet phase the producer sends nothing
// more, retries included, so that its last records have time to commit
// and the consumers to read them.
func (w *idemProducer) stopped() bool {
	return w.c.quiet && w.c.sched.Now().After(simStart.Add(w.c.cfg.Duration+w.c.cfg.Settle/2))
}

// startNext sends pp's next record when nothing is in flight there.
func (w *idemProducer) startNext(pp *idemPart) {
	if pp.cur != nil || len(pp.queue) == 0 || w.bump {
		return
	}
	n := min(len(pp.queue), idemMaxBatch)
	pp.cur = &idemBatch{values: slices.Clone(pp.queue[:n]), epoch: w.epoch, seq: pp.seq}
	pp.queue = pp.queue[n:]
	pp.seq += int32(n)
	w.send(pp, pp.cur)
}

// send sends b (again) to a broker that believes it leads pp's partition,
// with a timeout after which it is sent again.
func (w *idemProducer) send(pp *idemPart, b *idemBatch) {
	c := w.c
	if w.stopped() {
		return // left unacknowledged
	}
	b.attempts++
	attempt := b.attempts
	if attempt > 1 {
		w.retries++
		if c.cfg.IdemRetryNewSequence {
			b.seq = pp.seq // a bug, for a test: the retry is a new batch to the broker
			pp.seq += int32(len(b.values))
		}
	}
	leaders := c.believedLeaders(pp.part)
	if len(leaders) == 0 {
		c.sched.After(idemRetryBackoff, "~producer retry", func() { w.retry(pp, b, attempt) })
		return
	}
	lb := leaders[c.sched.Rand.Intn(len(leaders))]
	recs := make([]batch.Record, len(b.values))
	for i, v := range b.values {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	data, err := batch.Build(batch.BuildOptions{BaseTimestamp: c.sched.Now().UnixMilli(),
		Producer: &batch.Producer{ID: idemProducerID, Epoch: b.epoch, BaseSequence: b.seq}}, recs, nil)
	if err != nil {
		c.fail("build batch: %v", err)
		return
	}
	inc := lb.incarnation
	c.net.Send(clientNode, lb.id, "Produce", func() {
		c.produce(lb, inc, pp.part, data, b.values, func(code int16, offset int64) {
			c.net.Send(lb.id, clientNode, "Produce answer", func() { w.answered(pp, b, attempt, code, offset) })
		})
	})
	c.sched.After(idemRequestTimeout, "~producer timeout", func() { w.retry(pp, b, attempt) })
}

// retry sends b again unless it was answered or sent again since attempt.
func (w *idemProducer) retry(pp *idemPart, b *idemBatch, attempt int) {
	if pp.cur == b && b.attempts == attempt {
		w.send(pp, b)
	}
}

// answered handles the answer to attempt of b. A success of any attempt
// acknowledges b (every attempt is the same batch); an error of an
// attempt sent again since is stale.
func (w *idemProducer) answered(pp *idemPart, b *idemBatch, attempt int, code int16, offset int64) {
	c := w.c
	if pp.cur != b {
		return // acknowledged or failed already
	}
	switch {
	case code == 0:
		for i, v := range b.values {
			if w.lostAcks[v] {
				continue // the answer was on its way when the record was lost
			}
			if prev, ok := w.ackedAt[v]; ok && prev != offset+int64(i) {
				c.fail("p%d: %s acknowledged at offset %d, then at %d", pp.part, v, prev, offset+int64(i))
				return
			}
			w.ackedAt[v] = offset + int64(i)
		}
		pp.cur = nil
		w.maybeBump()
		w.startNext(pp)
	case attempt != b.attempts:
		// stale: the batch went out again since
	case code == kerr.OutOfOrderSequenceNumber.Code || code == kerr.UnknownProducerID.Code:
		c.sched.Tracef("p%d: %v (producer epoch %d sequence %d) failed with %v; the epoch is bumped", pp.part, b.values, b.epoch, b.seq, kerr.ErrorForCode(code))
		pp.cur = nil
		w.bump = true
		w.maybeBump()
	case code == kerr.InvalidProducerEpoch.Code:
		c.fail("p%d: the idempotent producer's batch %v (epoch %d sequence %d) was fenced: nothing else uses its id", pp.part, b.values, b.epoch, b.seq)
	default:
		c.sched.After(idemRetryBackoff, "~producer retry", func() { w.retry(pp, b, attempt) })
	}
}

// maybeBump bumps the epoch once no batch is in flight, restarts every
// partition's sequence at 0 and sends what waits.
func (w *idemProducer) maybeBump() {
	if !w.bump {
		return
	}
	for _, pp := range w.parts {
		if pp.cur != nil {
			return
		}
	}
	w.bump = false
	w.epoch++
	w.bumps++
	for part := range w.c.cfg.Partitions { // in order: the trace must replay
		if pp := w.parts[part]; pp != nil {
			pp.seq = 0
			w.startNext(pp)
		}
	}
}

// produceCode is the Produce error code of an append error: sequence and
// epoch errors as the broker maps them, the rest (not the leader, not
// enough replicas) retriable.
func produceCode(err error) int16 {
	switch {
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	default:
		return kerr.NotLeaderForPartition.Code
	}
}

// lost: v, committed, was lost by power failures as Kafka loses records.
func (w *idemProducer) lost(v string) {
	w.lostAcks[v] = true
	delete(w.ackedAt, v)
}

// scanLeader checks a leader's log from where its term was last checked
// up to its HW (which never moves back within a term, invariants.check)
// for a record of the producer twice; false when it found one.
func (w *idemProducer) scanLeader(k hwKey, l *log.Log, hw int64) bool {
	s := w.scans[k]
	if s == nil {
		s = &idemScan{hw: l.LogStartOffset(), at: map[string]int64{}}
		w.scans[k] = s
	}
	if hw <= s.hw {
		return true
	}
	values, err := readValuesFrom(l, s.hw, hw)
	if err != nil {
		w.c.fail("p%d: read leader %d's log: %v", k.part, k.broker, err)
		return false
	}
	for off := s.hw; off < hw; off++ {
		if !w.note(s.at, k.part, k.broker, hw, off, values[off]) {
			return false
		}
	}
	s.hw = hw
	return true
}

// note records that v is at off in a log of broker id (HW hw): false,
// after the failure, when it is the producer's and at holds it already,
// or it was acknowledged at another offset.
func (w *idemProducer) note(at map[string]int64, part, id int32, hw, off int64, v string) bool {
	if !strings.HasPrefix(v, "value-") {
		return true
	}
	if prev, dup := at[v]; dup {
		w.c.fail("p%d: broker %d holds %s twice below its HW %d, at offsets %d and %d", part, id, v, hw, prev, off)
		return false
	}
	at[v] = off
	if acked, ok := w.ackedAt[v]; ok && acked != off {
		w.c.fail("p%d: %s acknowledged at offset %d is at %d on broker %d", part, v, acked, off, id)
		return false
	}
	return true
}

// final: no replica holds a record of the producer twice below its HW,
// and each acknowledged record still held is at its acknowledged offset.
func (w *idemProducer) final() {
	c := w.c
	for _, b := range c.brokers {
		if !b.up {
			continue
		}
		for part := range c.cfg.Partitions {
			l := b.logs.Get(log.TopicPartition{Topic: topic, Partition: part})
			if l == nil {
				continue
			}
			values, err := readValues(l, l.HighWatermark())
			if err != nil {
				c.fail("p%d: read broker %d's log: %v", part, b.id, err)
				return
			}
			at := map[string]int64{}
			for off := l.LogStartOffset(); off < l.HighWatermark(); off++ {
				if !w.note(at, part, b.id, l.HighWatermark(), off, values[off]) {
					return
				}
			}
		}
	}
}
