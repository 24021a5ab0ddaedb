package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/group"
	"github.com/brook-mq/brook/txn"
)

// Transactional offset commits (Config.TxnOffsets): a transactional
// producer that consumes as well (read-process-write) commits its
// consumer group's offset inside its transaction. Its group's offsets
// partition joins the transaction in the producer's AddPartitionsToTxn
// (AddOffsetsToTxn's partition, txn.Coordinator.OffsetsPartition; a TV2
// client's TxnOffsetCommit v5 has the broker add it, here the producer
// does, as for its other partitions), then TxnOffsetCommit goes to the
// real group coordinator of the offsets partition's leader
// (group.Coordinator.StartTxnOffsetCommit), which writes a transactional
// batch of the producer and holds the offset pending until the
// transaction's marker reaches the offsets partition (simMarkers sends
// it there like any other; once it is committed the leader calls
// OnTxnMarker, as broker/27_write_txn_markers.go does).
//
// Checked, on fetches answered by the offsets partition's leader as
// ZooKeeper holds it, at the epoch it leads in (as for the simple
// consumers, groups.go): an offset shown is one of a transaction the
// coordinator decided to commit (an aborted or undecided transaction's
// offset is never visible); it is never below an offset whose commit
// marker was applied (committed marker: never lost afterwards); with
// require_stable, a partition whose transaction wrote its offset
// (TxnOffsetCommit acknowledged) and is not decided yet answers
// UNSTABLE_OFFSET_COMMIT, as Kafka's GroupMetadata
// hasPendingOffsetCommitsForTopicPartition makes it. After the quiet
// phase every group's offset is stable and shows the last transaction
// whose commit EndTxn acknowledged with its offset.

// txnOffsetsShare is the share of transactions that commit offsets.
const txnOffsetsShare = 0.7

// txnOffsets is the workload's bookkeeping, in txnWorkload.
type txnOffsets struct {
	// byOffset maps each group's committed offsets to their transaction:
	// the offsets are unique per group (the producer's counter).
	byOffset map[string]map[int64]*openTxn
	// visible is each group's highest offset whose commit marker was
	// applied by the offsets partition's leader.
	visible map[string]int64
	// losses counts the offsets partition's losses by power failures,
	// which forgive the transactions begun before (openTxn.offsetsEpoch).
	losses int
	// fetches counts the checked fetches, unstable those answered
	// UNSTABLE_OFFSET_COMMIT; made the offsets made visible.
	fetches, unstable, made int
}

func newTxnOffsets() *txnOffsets {
	return &txnOffsets{byOffset: map[string]map[int64]*openTxn{}, visible: map[string]int64{}}
}

// txnGroup is producer idx's consumer group.
func txnGroup(idx int) string { return fmt.Sprintf("txn-group-%d", idx) }

// markerPartition is the __consumer_offsets partition of the group in the
// simulation: the offsets partition of the topic.
func (w *txnWorkload) markerPartition(tp txn.TopicPartition) (int32, bool) {
	if tp.Topic == txn.OffsetsTopic && w.c.cfg.TxnOffsets {
		return w.c.offsetsPart(), true
	}
	return tp.Partition, tp.Topic == topic
}

// planOffsets decides whether t commits offsets and which.
func (w *txnWorkload) planOffsets(tp *txnProducer, t *openTxn) {
	if w.offs == nil || !w.c.sched.Chance(txnOffsetsShare) {
		return
	}
	tp.offsetsNext++
	t.group, t.offset, t.offsetsEpoch = txnGroup(tp.idx), tp.offsetsNext, w.offs.losses
	byOff := w.offs.byOffset[t.group]
	if byOff == nil {
		byOff = map[int64]*openTxn{}
		w.offs.byOffset[t.group] = byOff
	}
	byOff[t.offset] = t
}

// commitOffsets sends t's TxnOffsetCommit to a broker that believes it
// leads the offsets partition, again after a lost request or answer or a
// retriable error, until t ends.
func (w *txnWorkload) commitOffsets(tp *txnProducer, t *openTxn) {
	c := w.c
	if tp.cur != t || t.ending || t.offsetsAcked {
		return
	}
	t.offsetsReq++
	req := t.offsetsReq
	retry := func(after time.Duration) {
		c.sched.After(after, "~txn offsets retry", func() {
			if t.offsetsReq == req {
				w.commitOffsets(tp, t)
			}
		})
	}
	leaders := c.believedLeaders(c.offsetsPart())
	if len(leaders) == 0 {
		retry(txnRetryBackoff)
		return
	}
	retry(commitRequestTimeout)
	b := leaders[c.sched.Rand.Intn(len(leaders))]
	inc := b.incarnation
	c.net.Send(clientNode, b.id, "TxnOffsetCommit "+t.key, func() {
		if !b.live(inc) {
			return
		}
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.Version, r.TransactionalID, r.Group = 3, tp.txnID, t.group
		r.ProducerID, r.ProducerEpoch, r.Generation = t.pid, t.epoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = committedTopic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = t.offset
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		pc := b.coord.StartTxnOffsetCommit(r)
		answer := func() {
			code := pc.Response(false).Topics[0].Partitions[0].ErrorCode
			c.net.Send(b.id, clientNode, "TxnOffsetCommit answer", func() {
				if t.offsetsReq != req {
					return
				}
				t.offsetsReq++ // answered: the timeout no longer applies
				switch {
				case code == 0:
					t.offsetsAcked = true
					c.sched.Tracef("txn %s: offset %d of %s written", t.key, t.offset, t.group)
				case retriable(code) || code == kerr.CoordinatorLoadInProgress.Code:
					retry(txnRetryBackoff)
				default:
					c.sched.Tracef("txn %s: TxnOffsetCommit answered %v", t.key, kerr.ErrorForCode(code))
				}
			})
		}
		if pc.Done() == nil {
			answer()
			return
		}
		w.txnCommits = append(w.txnCommits, pendingTxnCommit{b: b, pc: pc, inc: inc, answer: answer})
	})
}

// pendingTxnCommit is a TxnOffsetCommit waiting for its append.
type pendingTxnCommit struct {
	b      *Broker
	pc     *group.PendingTxnCommit
	inc    int
	answer func()
}

// stepTxnCommits answers the TxnOffsetCommits whose appends completed.
func (w *txnWorkload) stepTxnCommits() {
	kept := w.txnCommits[:0]
	for _, pc := range w.txnCommits {
		select {
		case <-pc.pc.Done():
			if pc.b.live(pc.inc) {
				pc.answer()
			}
		default:
			kept = append(kept, pc)
		}
	}
	w.txnCommits = kept
}

// offsetsMarker runs when a marker of job is committed on the offsets
// partition at b: b's group coordinator applies it (OnTxnMarker), and a
// commit's offsets are visible from now on.
func (w *txnWorkload) offsetsMarker(b *Broker, job txn.MarkerJob) {
	b.coord.OnTxnMarker(0, job.ProducerID, job.Commit)
	for _, tp := range w.producers {
		for _, t := range tp.txns {
			if t.pid == job.ProducerID && t.epoch < job.ProducerEpoch {
				t.offsetsClosed = true
			}
			if job.Commit && t.group != "" && t.offsetsAcked && t.pid == job.ProducerID && t.epoch < job.ProducerEpoch &&
				w.outcome[t.key] && t.offset > w.offs.visible[t.group] && t.offsetsEpoch == w.offs.losses {
				w.offs.visible[t.group] = t.offset
				w.offs.made++
				w.c.sched.Tracef("txn %s: offset %d of %s committed by broker %d", t.key, t.offset, t.group, b.id)
			}
		}
	}
}

// offsetsLost: power failures took records of the offsets partition
// from every ISR member; the transactions begun before are forgiven.
func (w *txnWorkload) offsetsLost() {
	if w.offs != nil {
		w.offs.losses++
		clear(w.offs.visible)
	}
}

// scheduleTxnOffsetFetches fetches a transactional group's offset every
// 50-150 ms, with require_stable half the time.
func (w *txnWorkload) scheduleTxnOffsetFetches() {
	if w.offs == nil {
		return
	}
	c := w.c
	var next func()
	next = func() {
		if w.stopping() {
			return
		}
		tp := w.producers[c.sched.Rand.Intn(len(w.producers))]
		stable := c.sched.Chance(0.5)
		if leaders := c.believedLeaders(c.offsetsPart()); len(leaders) > 0 {
			b := leaders[c.sched.Rand.Intn(len(leaders))]
			inc := b.incarnation
			c.net.Send(clientNode, b.id, "OffsetFetch (transactional group)", func() { w.fetchTxnOffset(b, inc, tp, stable, false) })
		}
		c.sched.After(c.sched.Between(50*time.Millisecond, 150*time.Millisecond), "~txn offset fetch", next)
	}
	c.sched.After(time.Second, "~txn offset fetch", next)
}

// fetchTxnOffset serves an OffsetFetch of tp's group at b and checks it
// when b leads the offsets partition as ZooKeeper holds it; final: the
// check after the quiet phase, where it must succeed and be stable.
func (w *txnWorkload) fetchTxnOffset(b *Broker, inc int, tp *txnProducer, stable, final bool) {
	c := w.c
	if !b.live(inc) {
		return
	}
	g := txnGroup(tp.idx)
	got, code := fetchCommitted(b, g, stable)
	ps, p, ok := c.zkOffsetsLeader(b)
	if !ok {
		return
	}
	w.offs.fetches++
	pending := w.pendingOffset(tp)
	switch {
	case code == kerr.UnstableOffsetCommit.Code && stable:
		w.offs.unstable++
		if final && !w.offsetsForgiven(tp) {
			c.fail("%s: OffsetFetch (require_stable) at leader %d after the quiet phase: UNSTABLE_OFFSET_COMMIT", g, b.id)
		}
		return
	case code != 0:
		if final {
			c.fail("%s: OffsetFetch at leader %d after the quiet phase: %v", g, b.id, kerr.ErrorForCode(code))
		}
		return
	case stable && pending != nil:
		c.fail("%s: OffsetFetch (require_stable) at leader %d (epoch %d) answered offset %d, but txn %s's offset %d is written and undecided",
			g, b.id, ps.LeaderEpoch, got, pending.key, pending.offset)
		return
	}
	if got >= 0 {
		t := w.offs.byOffset[g][got]
		if t == nil || t.offsetsEpoch == w.offs.losses && !w.outcome[t.key] {
			key := "none"
			if t != nil {
				commit, decided := w.outcome[t.key]
				key = fmt.Sprintf("%s (decided %v, commit %v)", t.key, decided, commit)
			}
			c.fail("%s: coordinator %d (leader epoch %d) shows offset %d of txn %s, which the coordinator did not commit", g, b.id, ps.LeaderEpoch, got, key)
			return
		}
	}
	want := w.offs.visible[g]
	if final {
		want = max(want, w.lastCommittedOffset(tp))
	}
	if want > 0 && got < want {
		c.fail("%s: coordinator %d (leader epoch %d, HW %d, LEO %d) shows offset %d, but offset %d was committed in a transaction",
			g, b.id, ps.LeaderEpoch, p.HighWatermark(), p.Log().LogEndOffset(), got, want)
	}
}

// pendingOffset is tp's transaction whose offset is written and not yet
// decided (its offset must be pending at the coordinator), or nil.
func (w *txnWorkload) pendingOffset(tp *txnProducer) *openTxn {
	for _, t := range tp.txns {
		if t.group != "" && t.offsetsAcked && !t.decided && t.offsetsEpoch == w.offs.losses && !w.lostPIDs[t.pid] {
			return t
		}
	}
	return nil
}

// lastCommittedOffset is the offset of tp's last transaction whose commit
// EndTxn acknowledged with its offset written, 0 for none or forgiven.
func (w *txnWorkload) lastCommittedOffset(tp *txnProducer) int64 {
	var last int64
	for _, t := range tp.txns {
		if t.group != "" && t.offsetsAcked && t.commitAcked && t.offsetsEpoch == w.offs.losses && !w.lostPIDs[t.pid] {
			last = max(last, t.offset)
		}
	}
	return last
}

// offsetsForgiven: a transaction of tp may hang on the offsets partition
// for a loss the checks forgive: its coordinator state was lost
// (stateLost), and no marker reached the offsets partition
// since (a later transaction of the producer that commits no offsets
// decides it on its own partitions only; seed 161).
func (w *txnWorkload) offsetsForgiven(tp *txnProducer) bool {
	for _, t := range tp.txns {
		if t.group != "" && !t.offsetsClosed && w.lostPIDs[t.pid] {
			return true
		}
	}
	return false
}

// finalTxnOffsets fetches every transactional group's offset, stable,
// from the offsets partition's leader.
func (w *txnWorkload) finalTxnOffsets() {
	c := w.c
	if w.offs == nil {
		return
	}
	ps, ok := c.inv.storedState(c.offsetsPart())
	if !ok || ps.Leader < 0 {
		return // final reports a partition without a leader
	}
	b := c.brokers[ps.Leader-1]
	for _, tp := range w.producers {
		if c.failure != nil {
			return
		}
		w.fetchTxnOffset(b, b.incarnation, tp, true, true)
	}
	c.sched.Tracef("txn offsets: %d fetches checked, %d unstable, %d losses of the offsets partition", w.offs.fetches, w.offs.unstable, w.offs.losses)
}
