package sim

import (
	"errors"
	"fmt"
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
// epoch goes up by one locally once no batch is in flight, and every
// partition's sequence starts again at 0).
//
// Invariants (final): no record of the producer is in any replica's log
// twice below its HW, and an acknowledged record is at the offset its
// answer gave (invariants.final checks it is there).

// idemProducerID is the producer's id, below the transaction
// coordinators' allocations (txnProducerBase): the simulation's
// allocation, as the broker's id block would hand one.
const idemProducerID = 1

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
	// ackedAt is the offset each acknowledged record's answer gave.
	ackedAt map[string]int64
	// retries, duplicates and bumps count the resends, the answers that
	// were duplicates and the epoch bumps.
	retries, duplicates, bumps int
}

type idemPart struct {
	part  int32
	seq   int32 // the next batch's sequence
	queue []string
	cur   *idemBatch // in flight, nil when none
}

type idemBatch struct {
	value    string
	epoch    int16
	seq      int32
	attempts int
}

func newIdemProducer(c *Cluster) *idemProducer {
	return &idemProducer{c: c, parts: map[int32]*idemPart{}, ackedAt: map[string]int64{}}
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
	pp.cur = &idemBatch{value: pp.queue[0], epoch: w.epoch, seq: pp.seq}
	pp.queue = pp.queue[1:]
	pp.seq++
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
			pp.seq++
		}
	}
	leaders := c.believedLeaders(pp.part)
	if len(leaders) == 0 {
		c.sched.After(idemRetryBackoff, "~producer retry", func() { w.retry(pp, b, attempt) })
		return
	}
	lb := leaders[c.sched.Rand.Intn(len(leaders))]
	data, err := batch.Build(batch.BuildOptions{BaseTimestamp: c.sched.Now().UnixMilli(),
		Producer: &batch.Producer{ID: idemProducerID, Epoch: b.epoch, BaseSequence: b.seq}}, []batch.Record{{Value: []byte(b.value)}}, nil)
	if err != nil {
		c.fail("build batch: %v", err)
		return
	}
	inc := lb.incarnation
	c.net.Send(clientNode, lb.id, "Produce", func() {
		c.produce(lb, inc, pp.part, data, b.value, func(code int16, offset int64) {
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
		if prev, ok := w.ackedAt[b.value]; ok && prev != offset {
			c.fail("p%d: %s acknowledged at offset %d, then at %d", pp.part, b.value, prev, offset)
			return
		}
		w.ackedAt[b.value] = offset
		pp.cur = nil
		w.maybeBump()
		w.startNext(pp)
	case attempt != b.attempts:
		// stale: the batch went out again since
	case code == kerr.OutOfOrderSequenceNumber.Code || code == kerr.UnknownProducerID.Code:
		c.sched.Tracef("p%d: %s (producer epoch %d sequence %d) failed with %v; the epoch is bumped", pp.part, b.value, b.epoch, b.seq, kerr.ErrorForCode(code))
		pp.cur = nil
		w.bump = true
		w.maybeBump()
	case code == kerr.InvalidProducerEpoch.Code:
		c.fail("p%d: the idempotent producer's batch %s (epoch %d sequence %d) was fenced: nothing else uses its id", pp.part, b.value, b.epoch, b.seq)
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
				v, ok := values[off]
				if !ok || !strings.HasPrefix(v, "value-") {
					continue
				}
				if prev, dup := at[v]; dup {
					c.fail("p%d: broker %d holds %s twice below its HW %d, at offsets %d and %d", part, b.id, v, l.HighWatermark(), prev, off)
					return
				}
				at[v] = off
				if acked, ok := w.ackedAt[v]; ok && acked != off {
					c.fail("p%d: %s acknowledged at offset %d is at %d on broker %d", part, v, acked, off, b.id)
					return
				}
			}
		}
	}
}
