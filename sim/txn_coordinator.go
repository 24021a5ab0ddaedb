package sim

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
	"github.com/brook-mq/brook/txn"
)

// The transaction coordinator's side: the real txn.Coordinator on every
// broker, leading the transactional ids when its broker leads the
// __transaction_state partition (the topic's last partition on the
// transactional seeds, as the offsets partition is on the group seeds),
// driven by its step form: Coordinator.Step after every event (load,
// appends, marker jobs), Coordinator.Tick every
// transaction.abort.timed.out.transaction.cleanup.interval.ms of virtual
// time. Its records go through simTxnState to the replicated partition;
// its markers through simMarkers, WriteTxnMarkers over the simulated
// network to the partitions' leaders, whose answers come back as events.

// txnAbortInterval is the coordinator's
// transaction.abort.timed.out.transaction.cleanup.interval.ms, shortened
// (Kafka's 10 s) so that a timed-out transaction is aborted within a run.
const txnAbortInterval = time.Second

// markerRequestTimeout is the coordinator's wait for a WriteTxnMarkers
// answer; the partitions left unanswered are retried.
const markerRequestTimeout = time.Second

// txnCoordinator is one broker incarnation's transaction coordinator.
type txnCoordinator struct {
	b        *Broker
	inc      int
	c        *txn.Coordinator
	nextTick time.Time
}

// coordinator returns b's coordinator of incarnation inc, made at its
// first election; nil when inc is not live.
func (w *txnWorkload) coordinator(b *Broker, inc int) *txnCoordinator {
	if !b.live(inc) {
		return nil
	}
	tc := w.coords[b.id-1]
	if tc != nil && tc.inc == inc {
		return tc
	}
	tc = &txnCoordinator{b: b, inc: inc}
	tc.c = txn.New(txn.Config{
		NumPartitions: 1, OffsetsNumPartitions: 1, AbortTimedOutInterval: txnAbortInterval,
		NewProducerID: w.newProducerID, Markers: simMarkers{w: w, b: b, inc: inc},
		Now: w.c.sched.Now, Logger: slog.New(slog.DiscardHandler), Faults: w.c.cfg.TxnFaults,
	})
	tc.nextTick = w.c.sched.Now().Add(txnAbortInterval)
	w.coords[b.id-1] = tc
	return tc
}

// becameLeader is broker/transactions.go's onTxnStateLeader.
func (w *txnWorkload) becameLeader(b *Broker, inc int, p *replica.Partition, epoch int32) {
	w.c.sched.Tracef("broker %d txn coordinator elected (epoch %d, LEO %d, HW %d)", b.id, epoch, p.Log().LogEndOffset(), p.HighWatermark())
	if tc := w.coordinator(b, inc); tc != nil {
		tc.c.OnElected(0, epoch, simTxnState{simOffsets{b: b, inc: inc, p: p}})
	}
}

func (w *txnWorkload) resigned(b *Broker, inc int, epoch int32) {
	if tc := w.coords[b.id-1]; tc != nil && tc.inc == inc && b.live(inc) {
		tc.c.OnResigned(0, epoch)
	}
}

// stepCoordinators runs, after every event, each live coordinator's
// appends now committed, one Step, and its Tick when due.
func (w *txnWorkload) stepCoordinators() {
	now := w.c.sched.Now()
	for _, b := range w.c.brokers {
		tc := w.coords[b.id-1]
		if tc == nil || !b.live(tc.inc) {
			continue
		}
		if w.c.cfg.Groups == 0 {
			b.completeAppends() // stepGroups does it on the group seeds
		}
		if !now.Before(tc.nextTick) {
			tc.c.Tick()
			tc.nextTick = now.Add(txnAbortInterval)
		}
		tc.c.Step()
	}
}

// newProducerID is the broker's producer id allocator: a counter of the
// run, so that ids replay.
func (w *txnWorkload) newProducerID(context.Context) (int64, error) {
	w.nextPID++
	return w.nextPID, nil
}

// simTxnState is the __transaction_state partition as the coordinator
// sees it: read to the log end like the offsets partition, appended with
// acks=all as broker/transactions.go's txnStatePartition does, the wait
// for the commit polled after every event (completeAppends).
type simTxnState struct{ simOffsets }

func (s simTxnState) AppendAsync(data []byte, done func(int64, error)) {
	info, term, err := s.p.AppendAsLeaderInTerm(data, -1, s.b.c.cfg.MinISR)
	if err != nil {
		done(-1, err)
		return
	}
	s.b.appends = append(s.b.appends, pendingAppend{p: s.p, end: info.LastOffset + 1, term: term, base: info.FirstOffset, done: done})
}

// simMarkers is broker/transactions.go's markerSender on the simulated
// network: one WriteTxnMarkers per leader (a broker that believes it
// leads the partition, as the sender's metadata may be stale), the
// leader's side the real AppendTxnMarkerAsLeader and WaitForCommit, the
// answers merged once all came back or after markerRequestTimeout.
type simMarkers struct {
	w   *txnWorkload
	b   *Broker
	inc int
}

func (s simMarkers) WriteMarkers(context.Context, txn.MarkerJob) map[txn.TopicPartition]int16 {
	panic("sim: the coordinator's partitions are AsyncPartitions; markers go through WriteMarkersAsync")
}

func (s simMarkers) WriteMarkersAsync(job txn.MarkerJob, done func(map[txn.TopicPartition]int16)) {
	w, c := s.w, s.w.c
	w.markerJob(job)
	res := map[txn.TopicPartition]int16{}
	byLeader := map[int32][]txn.TopicPartition{}
	var order []*Broker // leaders in the order first chosen: the sends replay
	for _, tp := range job.Partitions {
		part, ok := w.markerPartition(tp)
		if !ok {
			continue
		}
		leaders := c.believedLeaders(part)
		if len(leaders) == 0 {
			continue // no leader now: retried
		}
		l := leaders[c.sched.Rand.Intn(len(leaders))]
		if byLeader[l.id] == nil {
			order = append(order, l)
		}
		byLeader[l.id] = append(byLeader[l.id], tp)
	}
	waiting, finished := len(order), false
	finish := func() {
		if !finished && s.b.live(s.inc) {
			finished = true
			done(res)
		}
	}
	if waiting == 0 {
		finish()
		return
	}
	c.sched.After(markerRequestTimeout, "~txn markers timeout", finish)
	for _, l := range order {
		tps, linc := byLeader[l.id], l.incarnation
		c.net.Send(s.b.id, l.id, "WriteTxnMarkers", func() {
			w.writeMarkers(l, linc, job, tps, func(codes map[txn.TopicPartition]int16) {
				c.net.Send(l.id, s.b.id, "WriteTxnMarkers answer", func() {
					for tp, code := range codes {
						res[tp] = code
					}
					if waiting--; waiting == 0 {
						finish()
					}
				})
			})
		})
	}
}

// writeMarkers is the leader's side of WriteTxnMarkers
// (broker/27_write_txn_markers.go): each partition's marker appended,
// the answer sent once every one is committed or failed.
func (w *txnWorkload) writeMarkers(b *Broker, inc int, job txn.MarkerJob, tps []txn.TopicPartition, answer func(map[txn.TopicPartition]int16)) {
	if !b.live(inc) {
		return
	}
	m := log.TxnMarker{ProducerID: job.ProducerID, ProducerEpoch: job.ProducerEpoch, CoordinatorEpoch: job.CoordinatorEpoch,
		Commit: job.Commit, TransactionVersion: job.TransactionVersion}
	codes := map[txn.TopicPartition]int16{}
	left := len(tps)
	set := func(tp txn.TopicPartition, code int16) {
		codes[tp] = code
		if left--; left == 0 {
			answer(codes)
		}
	}
	for _, tp := range tps {
		part, _ := w.markerPartition(tp)
		p := b.rm.Get(topic, part)
		if p == nil {
			set(tp, kerr.UnknownTopicOrPartition.Code)
			continue
		}
		info, term, err := p.AppendTxnMarkerAsLeader(m, w.c.cfg.MinISR)
		if err != nil {
			set(tp, markerErrorCode(err))
			continue
		}
		w.waits = append(w.waits, markerWait{b: b, inc: inc, p: p, end: info.LastOffset + 1, term: term,
			done: func(err error) {
				if err == nil && tp.Topic == txn.OffsetsTopic {
					w.offsetsMarker(b, job) // txn_offsets.go
				}
				set(tp, markerErrorCode(err))
			}})
	}
}

// markerErrorCode is the part of broker/errors.go's appendErrorCode and
// commitWaitErrorCode that the marker sender tells apart: a fenced
// producer or coordinator stops the job, anything else is retried.
func markerErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, log.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, replica.ErrNotEnoughReplicas), errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicas.Code
	}
	return kerr.NotLeaderForPartition.Code
}

// markerWait is a marker waiting for acks=all at its leader.
type markerWait struct {
	b    *Broker
	inc  int
	p    *replica.Partition
	end  int64
	term int32
	done func(error)
	err  error
}

// stepMarkerWaits completes the markers now committed, with the real
// WaitForCommit; a crashed leader's never answer.
func (w *txnWorkload) stepMarkerWaits() {
	kept := w.waits[:0]
	var finished []markerWait
	for _, m := range w.waits {
		if !m.b.live(m.inc) {
			continue
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
