package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/txn"
)

// The transactional workload: producers with a transactional id, each
// running one transaction at a time, against the real transaction
// coordinator (txn_coordinator.go) over the simulated network, as a
// transaction version 2 client does: InitProducerId, AddPartitionsToTxn
// (which a TV2 partition leader sends for its producer; here the producer
// does, before its first batch), the transactional batches at acks=all to
// the partitions' leaders, then EndTxn v5, whose answer carries the
// epoch (bumped at every end) the next transaction goes on with, so its
// sequences start at 0 and a stale request of the last one is fenced. A
// request or answer lost is sent again after the request timeout, a
// retriable error after retry.backoff.ms; a fatal one (PRODUCER_FENCED,
// INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE: the coordinator fenced
// or aborted the transaction) drops it and the producer starts over with
// InitProducerId, as an application recreating a fenced producer. Now and
// then a producer crashes before EndTxn and starts over later, so that
// InitProducerId fences its open transaction, or the coordinator aborts
// it at its timeout.
//
// The partitions' side is the real code: transactional batches through
// Partition.AppendAsLeaderInTerm (the log's producer state checks epochs
// and sequences and opens the transaction), markers from the
// coordinator's sender through Partition.AppendTxnMarkerAsLeader (it
// closes the transaction, indexes an abort in the .txnindex and moves the
// last stable offset).
//
// What a transaction's outcome is comes from the coordinator: the marker
// jobs its sender is handed (once PrepareCommit or PrepareAbort is
// committed) decide the producer's transactions written with an earlier
// epoch; consumers.go checks what read_committed delivers against it.

// txnDecideAfter is how long a producer waits for its batches' answers
// before it ends the transaction: far above the network's delay, so no
// request of the transaction is still in flight when EndTxn goes out.
const txnDecideAfter = time.Second

// txnTimeoutMs is the producers' transaction.timeout.ms, short enough for
// the coordinator to abort a crashed producer's transaction within a run.
const txnTimeoutMs = 4000

// txnRequestTimeout is the producer's wait for a coordinator's answer
// before it sends the request again; txnRetryBackoff its retry.backoff.ms.
const (
	txnRequestTimeout = time.Second
	txnRetryBackoff   = 100 * time.Millisecond
)

// txnProducerBase is below the first producer id the coordinators allocate.
const txnProducerBase = 1000

type txnWorkload struct {
	c         *Cluster
	producers []*txnProducer
	// coords are the brokers' coordinators, by broker id - 1.
	coords  []*txnCoordinator
	nextPID int64
	// outcome is every decided transaction's decision by key: true commits.
	outcome map[string]bool
	// decisions are the marker jobs' outcomes by producer id and epoch: a
	// job sent again (a retry, a failover) must decide the same.
	decisions map[pidEpoch]bool
	// waits are markers waiting for acks=all, polled after every event.
	waits []markerWait
	// calls are coordinator requests waiting for their answer.
	calls              []txnCall
	committed, aborted int
	// givenUp counts transactions given up in the quiet phase before
	// their partitions were added (addPartitions).
	givenUp int
	// abortsAwaited counts the producers whose given-up transaction the
	// final checks waited for the coordinator's timeout to abort
	// (awaitsTimeoutAbort).
	abortsAwaited int
	// lostPIDs are the producer ids in use, and those of undecided
	// transactions, when a power failure took __transaction_state's
	// records (stateLost).
	lostPIDs    map[int64]bool
	stateLosses int
	// offs tracks the transactional offset commits (txn_offsets.go), nil
	// without Config.TxnOffsets; txnCommits are those waiting for their
	// append.
	offs       *txnOffsets
	txnCommits []pendingTxnCommit
}

// stateLost: power failures took records of __transaction_state from
// every ISR member, as Kafka would lose them (its coordinator does not
// fsync either). The coordinator that loads what is left no longer knows
// the transactions those records began or ended, so it never writes their
// markers: each partition they wrote to holds a hanging transaction,
// which in Kafka an operator ends with kafka-transactions.sh abort. The
// final checks hold every other transaction to the rules and report each
// transaction and hanging partition forgiven this way in the trace.
//
// A decided transaction's producer is forgiven too: the records lost may
// be its PrepareCommit or PrepareAbort with markers still to write (seed
// 309: an abort decided at 11.3 s whose marker had not reached p0 when a
// power failure took the record).
func (w *txnWorkload) stateLost() {
	w.stateLosses++
	w.forgetUndecided()
}

// forgetUndecided forgives the transactions that may hang because the
// coordinator no longer knows them: those of the producer ids in use and
// of the undecided transactions.
func (w *txnWorkload) forgetUndecided() {
	if w.lostPIDs == nil {
		w.lostPIDs = map[int64]bool{}
	}
	for _, tp := range w.producers {
		if tp.pid >= 0 {
			w.lostPIDs[tp.pid] = true // the coordinator may not know it at all now
		}
		for _, t := range append(tp.txns, tp.cur) {
			if t != nil && (!t.decided || t.batches > 0) {
				w.lostPIDs[t.pid] = true
			}
		}
	}
	w.c.sched.Tracef("txn: coordinator state lost; transactions of producers %v may hang", slices.Sorted(maps.Keys(w.lostPIDs)))
}

type pidEpoch struct {
	pid   int64
	epoch int16
}

type txnProducer struct {
	txnID string
	idx   int
	// pid and epoch are what the coordinator gave; pid -1 before
	// InitProducerId answered.
	pid   int64
	epoch int16
	n     int
	cur   *openTxn
	txns  []*openTxn
	// req numbers the producer's request in flight; the answer or timeout
	// of an older one is dropped.
	req int
	// offsetsNext is the last offset its transactions commit for its group.
	offsetsNext int64
	// givenUpPID is the producer id of the transaction given up in the
	// quiet phase (addPartitions), -1 if none: the coordinator may have
	// opened it, and then only its timeout abort ends it (awaitsTimeoutAbort).
	givenUpPID int64
	awaited    bool
}

// openTxn is one transaction of a producer.
type openTxn struct {
	key   string
	pid   int64
	epoch int16
	seq   map[int32]int32
	// batchParts are the partitions of its batches, in order; parts
	// those without repeats, added to the transaction first.
	batchParts []int32
	parts      []int32
	// batches is how many were sent; acked are those whose success came back.
	batches int
	acked   map[int]bool
	// ending: EndTxn was sent, asking commit.
	ending, commit bool
	decided        bool
	// commitAcked: EndTxn asking commit was acknowledged.
	commitAcked bool
	// group is the consumer group whose offset it commits (txn_offsets.go),
	// "" for none; offsetsEpoch the offsets partition's losses before it
	// began; offsetsReq numbers its TxnOffsetCommit in flight;
	// offsetsAcked: one succeeded.
	group        string
	offset       int64
	offsetsEpoch int
	offsetsReq   int
	offsetsAcked bool
	// offsetsClosed: a marker of a later epoch of its producer was
	// committed on the offsets partition (txn_offsets.go).
	offsetsClosed bool
}

// txnCall is a coordinator request whose answer is awaited: poll sends
// it back once there is one.
type txnCall struct {
	b    *Broker
	inc  int
	poll func() bool
}

func newTxnWorkload(c *Cluster) *txnWorkload {
	w := &txnWorkload{c: c, outcome: map[string]bool{}, decisions: map[pidEpoch]bool{}, nextPID: txnProducerBase,
		coords: make([]*txnCoordinator, c.cfg.Brokers)}
	for i := range c.cfg.Transactions {
		w.producers = append(w.producers, &txnProducer{txnID: fmt.Sprintf("txn-%d", i), idx: i, pid: -1, epoch: -1, givenUpPID: -1})
	}
	if c.cfg.TxnOffsets {
		w.offs = newTxnOffsets()
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
		w.c.sched.After(w.c.sched.Between(time.Second, 2*time.Second), fmt.Sprintf("txn producer %s starts", tp.txnID), func() { w.begin(tp) })
	}
	w.scheduleTxnOffsetFetches()
}

// stopping: the last transactions have time to end before the checks,
// also when their markers' requests or answers are lost a few times in a
// row (each round waits markerRequestTimeout): the producers stop
// earlier in the quiet phase than the other workloads (seed 1615 needed
// more than 6 s).
func (w *txnWorkload) stopping() bool {
	c := w.c
	return c.quiet && c.sched.Now().After(simStart.Add(c.cfg.Duration+c.cfg.Settle/4))
}

// step runs after every event: the markers committed at their leaders
// answer, the coordinators step, and their answers go back.
func (w *txnWorkload) step() {
	w.stepMarkerWaits()
	w.stepCoordinators()
	w.stepTxnCommits()
	kept := w.calls[:0]
	for _, call := range w.calls {
		if call.b.live(call.inc) && !call.poll() {
			kept = append(kept, call)
		}
	}
	w.calls = kept
}

// txnPart is the __transaction_state partition: the offsets partition's
// place when no groups run, the one after it when both do.
func (w *txnWorkload) txnPart() int32 {
	if w.c.cfg.TxnOffsets {
		return w.c.offsetsPart() + 1
	}
	return w.c.offsetsPart()
}

// callCoordinator sends one request of tp to a broker that believes it
// leads __transaction_state (FindCoordinator), where start runs it on the
// broker's coordinator; answer gets the coordinator's answer, resend runs
// when the request or its answer is lost (after the request timeout) or
// no broker leads.
func callCoordinator[T any](w *txnWorkload, tp *txnProducer, what string, notCoordinator T,
	start func(*txn.Coordinator) *txn.Pending[T], answer func(T), resend func()) {
	c := w.c
	tp.req++
	req := tp.req
	what += " " + tp.txnID
	leaders := c.believedLeaders(w.txnPart())
	if len(leaders) == 0 {
		c.sched.After(txnRetryBackoff, "~txn find coordinator", func() {
			if tp.req == req {
				resend()
			}
		})
		return
	}
	b := leaders[c.sched.Rand.Intn(len(leaders))]
	inc := b.incarnation
	c.sched.After(txnRequestTimeout, "~txn request timeout", func() {
		if tp.req == req {
			resend()
		}
	})
	reply := func(r T) {
		c.net.Send(b.id, clientNode, what+" answer", func() {
			if tp.req == req {
				tp.req++ // answered: the timeout no longer applies
				answer(r)
			}
		})
	}
	c.net.Send(clientNode, b.id, what, func() {
		if !b.live(inc) {
			return
		}
		tc := w.coords[b.id-1]
		if tc == nil || tc.inc != inc {
			reply(notCoordinator)
			return
		}
		p := start(tc.c)
		w.calls = append(w.calls, txnCall{b: b, inc: inc, poll: func() bool {
			r, ok := p.Poll()
			if ok {
				reply(r)
			}
			return ok
		}})
	})
}

// retriable is what Kafka's client retries: its retriable errors, and
// CONCURRENT_TRANSACTIONS (a RetriableException in Kafka, which franz-go's
// table does not mark).
func retriable(code int16) bool {
	return code == kerr.ConcurrentTransactions.Code || kerr.IsRetriable(kerr.ErrorForCode(code))
}

// later runs fn after retry.backoff.ms, unless the producer sent another
// request meanwhile.
func (w *txnWorkload) later(tp *txnProducer, fn func()) {
	req := tp.req
	w.c.sched.After(txnRetryBackoff, "~txn retry", func() {
		if tp.req == req {
			fn()
		}
	})
}

func (w *txnWorkload) begin(tp *txnProducer) {
	if w.stopping() || tp.cur != nil {
		return
	}
	if tp.pid < 0 {
		w.initProducerID(tp)
		return
	}
	c := w.c
	tp.n++
	t := &openTxn{key: fmt.Sprintf("%d.%d", tp.idx, tp.n), pid: tp.pid, epoch: tp.epoch, seq: map[int32]int32{}, acked: map[int]bool{}}
	for range 1 + c.sched.Rand.Intn(3) {
		part := c.sched.Rand.Int31n(c.cfg.Partitions)
		t.batchParts = append(t.batchParts, part)
		if !containsPart(t.parts, part) {
			t.parts = append(t.parts, part)
		}
	}
	w.planOffsets(tp, t)
	tp.cur = t
	tp.txns = append(tp.txns, t)
	c.sched.Tracef("txn %s begins: %s producer %d epoch %d, partitions %v, offset %d of %q", t.key, tp.txnID, t.pid, t.epoch, t.parts, t.offset, t.group)
	w.addPartitions(tp, t)
}

func (w *txnWorkload) initProducerID(tp *txnProducer) {
	notCoordinator := txn.InitResult{Err: kerr.NotCoordinator.Code, ProducerID: -1, ProducerEpoch: -1}
	callCoordinator(w, tp, "InitProducerId", notCoordinator, func(co *txn.Coordinator) *txn.Pending[txn.InitResult] {
		return co.StartInitProducerID(context.Background(), tp.txnID, txnTimeoutMs, -1, -1)
	}, func(r txn.InitResult) {
		switch {
		case r.Err == 0:
			tp.pid, tp.epoch = r.ProducerID, r.ProducerEpoch
			w.c.sched.Tracef("txn %s: producer %d epoch %d", tp.txnID, tp.pid, tp.epoch)
			w.c.sched.After(w.c.sched.Between(0, 200*time.Millisecond), "~txn begin", func() { w.begin(tp) })
		case retriable(r.Err):
			w.later(tp, func() { w.initProducerID(tp) })
		default:
			w.c.fail("txn %s: InitProducerId answered %v", tp.txnID, kerr.ErrorForCode(r.Err))
		}
	}, func() { w.initProducerID(tp) })
}

func (w *txnWorkload) addPartitions(tp *txnProducer, t *openTxn) {
	var tps []txn.TopicPartition
	for _, p := range t.parts {
		tps = append(tps, txn.TopicPartition{Topic: topic, Partition: p})
	}
	callCoordinator(w, tp, "AddPartitionsToTxn", kerr.NotCoordinator.Code, func(co *txn.Coordinator) *txn.Pending[int16] {
		if t.group != "" {
			tps = append(tps, co.OffsetsPartition(t.group)) // AddOffsetsToTxn's partition (txn_offsets.go)
		}
		return co.StartAddPartitions(tp.txnID, t.pid, t.epoch, tps, txn.TV2)
	}, func(code int16) {
		switch {
		case code == 0:
			if t.group != "" {
				w.commitOffsets(tp, t)
			}
			w.produceAll(tp, t)
		case retriable(code) && w.stopping() && len(t.acked) == 0:
			// Late in the quiet phase a transaction not begun yet is given
			// up, as begin begins none (seeds 2711, 1101, 1419, 5097): in seed 2711 the
			// coordinator's move after a power failure waited for the old
			// broker's session to expire, and the producer's
			// AddPartitionsToTxn was accepted only 1 s before the final
			// checks, with its batches and end still to come. Nothing of it reached a partition; had a lost
			// answer's copy been accepted, the coordinator's timeout abort
			// ends it.
			w.givenUp++
			tp.givenUpPID = t.pid
			w.drop(tp, t, fmt.Sprintf("AddPartitionsToTxn answered %v in the quiet phase", kerr.ErrorForCode(code)), 0)
		case retriable(code):
			w.later(tp, func() { w.addPartitions(tp, t) })
		default:
			w.drop(tp, t, fmt.Sprintf("AddPartitionsToTxn answered %v", kerr.ErrorForCode(code)), 0)
		}
	}, func() { w.addPartitions(tp, t) })
}

// produceAll sends t's batches a few ms apart, then ends t once their
// answers had time to come back; now and then the producer crashes
// instead and starts over later.
func (w *txnWorkload) produceAll(tp *txnProducer, t *openTxn) {
	c := w.c
	at := time.Duration(0)
	for i, part := range t.batchParts {
		c.sched.After(at, "~txn batch", func() { w.send(t, i, part) })
		at += c.sched.Between(5*time.Millisecond, 30*time.Millisecond)
	}
	c.sched.After(at+txnDecideAfter, fmt.Sprintf("txn %s ends", t.key), func() {
		if tp.cur != t {
			return
		}
		if c.sched.Chance(0.1) && !w.stopping() { // a crash at the end would be aborted only at its timeout
			w.drop(tp, t, "producer crash", c.sched.Between(0, 2*txnTimeoutMs*time.Millisecond))
			return
		}
		t.ending = true
		t.commit = len(t.acked) == t.batches && (t.group == "" || t.offsetsAcked) && c.sched.Chance(0.8)
		w.endTxn(tp, t)
	})
}

func (w *txnWorkload) endTxn(tp *txnProducer, t *openTxn) {
	notCoordinator := txn.EndResult{Err: kerr.NotCoordinator.Code, ProducerID: -1, ProducerEpoch: -1}
	callCoordinator(w, tp, "EndTxn", notCoordinator, func(co *txn.Coordinator) *txn.Pending[txn.EndResult] {
		return co.StartEndTxn(context.Background(), tp.txnID, t.pid, t.epoch, t.commit, txn.TV2)
	}, func(r txn.EndResult) {
		switch {
		case r.Err == 0:
			// The coordinator answers once PrepareCommit or PrepareAbort
			// is committed, and hands its markers to the sender first;
			// an abort of a transaction it holds no partition of (TV2's
			// abort from Empty) writes none, which the final checks
			// judge by the records.
			if commit, decided := w.outcome[t.key]; (!decided && t.commit) || (decided && commit != t.commit) {
				w.c.fail("txn %s: EndTxn (commit %v) acknowledged, but the coordinator decided %v (decided %v)", t.key, t.commit, commit, decided)
				return
			}
			tp.pid, tp.epoch = r.ProducerID, r.ProducerEpoch
			t.commitAcked = t.commit
			w.finish(tp, t)
		case retriable(r.Err):
			if r.Err != kerr.ConcurrentTransactions.Code {
				w.c.sched.Tracef("txn %s: EndTxn answered %v", t.key, kerr.ErrorForCode(r.Err))
			}
			w.later(tp, func() { w.endTxn(tp, t) })
		default:
			w.drop(tp, t, fmt.Sprintf("EndTxn answered %v", kerr.ErrorForCode(r.Err)), 0)
		}
	}, func() { w.endTxn(tp, t) })
}

// drop abandons t: the producer starts over with InitProducerId after
// pause, and the coordinator decides t (an abort, by the fence of that
// InitProducerId or at its timeout).
func (w *txnWorkload) drop(tp *txnProducer, t *openTxn, why string, pause time.Duration) {
	if tp.cur != t {
		return
	}
	w.c.sched.Tracef("txn %s dropped: %s", t.key, why)
	tp.cur, tp.pid, tp.epoch = nil, -1, -1
	tp.req++ // nothing of t is retried
	w.c.sched.After(txnRetryBackoff+pause, "~txn begin", func() { w.begin(tp) })
}

func (w *txnWorkload) finish(tp *txnProducer, t *openTxn) {
	if tp.cur != t {
		return
	}
	tp.cur = nil
	w.c.sched.Tracef("txn %s ended (commit %v)", t.key, t.commit)
	w.c.sched.After(w.c.sched.Between(0, 200*time.Millisecond), "~txn begin", func() { w.begin(tp) })
}

// markerJob runs when the coordinator hands its sender a job: its
// decision is final (PrepareCommit or PrepareAbort is committed) and
// decides the producer's transactions written at an earlier epoch (a TV2
// end bumps it: the markers carry the epoch after the transaction's).
func (w *txnWorkload) markerJob(job txn.MarkerJob) {
	c := w.c
	c.sched.Tracef("txn markers of %s producer %d epoch %d: commit %v on %v (coordinator epoch %d)", job.TransactionalID, job.ProducerID, job.ProducerEpoch, job.Commit, job.Partitions, job.CoordinatorEpoch)
	k := pidEpoch{job.ProducerID, job.ProducerEpoch}
	if commit, ok := w.decisions[k]; ok {
		if commit != job.Commit {
			c.fail("txn %s: producer %d epoch %d decided commit %v, now %v", job.TransactionalID, job.ProducerID, job.ProducerEpoch, commit, job.Commit)
		}
		return
	}
	w.decisions[k] = job.Commit
	for _, tp := range w.producers {
		if tp.txnID != job.TransactionalID {
			continue
		}
		for _, t := range tp.txns {
			if t.decided || t.pid != job.ProducerID || t.epoch >= job.ProducerEpoch {
				continue
			}
			t.decided = true
			w.outcome[t.key] = job.Commit
			if job.Commit {
				w.committed++
			} else {
				w.aborted++
			}
			c.sched.Tracef("txn %s decided by the coordinator: commit %v (markers at epoch %d, coordinator epoch %d, %d of %d batches acknowledged)",
				t.key, job.Commit, job.ProducerEpoch, job.CoordinatorEpoch, len(t.acked), t.batches)
		}
	}
}

// send produces batch i of t to part.
func (w *txnWorkload) send(t *openTxn, i int, part int32) {
	c := w.c
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
		Producer: &batch.Producer{ID: t.pid, Epoch: t.epoch, BaseSequence: seq}}, recs, nil)
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

// final: after the quiet phase no transaction is left open at its
// producer, undecided when it sent a batch, or unfinished at the
// coordinator, and every partition's last stable offset has reached its
// high watermark (no hanging transaction holds read_committed consumers
// back).
func (w *txnWorkload) final() {
	c := w.c
	for _, tp := range w.producers {
		if t := tp.cur; t != nil {
			c.fail("txn %s still open after the quiet phase: ending %v, %d of %d batches acknowledged", t.key, t.ending, len(t.acked), t.batches)
			return
		}
		for _, t := range tp.txns {
			if t.batches > 0 && !t.decided && w.lostPIDs[t.pid] {
				c.sched.Tracef("txn %s (producer %d) undecided: its coordinator state was lost", t.key, t.pid)
				continue
			}
			if t.batches > 0 && !t.decided {
				c.fail("txn %s (producer %d epoch %d, partitions %v) never decided by the coordinator", t.key, t.pid, t.epoch, t.parts)
				return
			}
		}
	}
	if !w.finalCoordinator() {
		return
	}
	w.finalTxnOffsets()
	if c.failure != nil {
		return
	}
	parts := make([]int32, 0, c.cfg.Partitions+1)
	for part := range c.cfg.Partitions {
		parts = append(parts, part)
	}
	if w.offs != nil {
		parts = append(parts, c.offsetsPart()) // the transactional offsets' batches and markers
	}
	for _, part := range parts {
		ps, ok := c.inv.storedState(part)
		if !ok || ps.Leader < 0 {
			continue // invariants.final reports it
		}
		p := c.brokers[ps.Leader-1].rm.Get(topic, part)
		if p == nil {
			continue
		}
		if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso != hw && !w.hangsForLostState(p.Log(), lso) {
			c.fail("p%d: last stable offset %d below the HW %d after every transaction ended (leader %d)", part, lso, hw, ps.Leader)
			return
		}
	}
}

// hangsForLostState reports whether the transaction open at lso is one
// whose coordinator state was lost (stateLost).
func (w *txnWorkload) hangsForLostState(l *log.Log, lso int64) bool {
	for _, ap := range l.ActiveProducers() {
		if ap.CurrentTxnStartOffset == lso && w.lostPIDs[ap.ProducerID] {
			w.c.sched.Tracef("hanging transaction of producer %d at offset %d: its coordinator state was lost", ap.ProducerID, lso)
			return true
		}
	}
	return false
}

// timeoutAbortWait bounds how long the final checks wait for
// awaitsTimeoutAbort: a transaction the coordinator opened by the end of
// the quiet phase is aborted within its timeout and the coordinator's
// next scan for timed-out transactions, and its markers are written
// within a few rounds of markerRequestTimeout.
const timeoutAbortWait = txnTimeoutMs*time.Millisecond + txnAbortInterval + 3*markerRequestTimeout

// awaitsTimeoutAbort reports whether the coordinator of
// __transaction_state's leader still holds a transaction open, or its
// abort unfinished, for a producer that gave its transaction up in the
// quiet phase. The producer gave it up when a resend of its
// AddPartitionsToTxn was answered CONCURRENT_TRANSACTIONS, but an earlier
// copy whose answer was lost may have opened it; then, as in Kafka, only
// the coordinator's timeout aborts it, which may be due after the quiet
// phase ends (seed 781 without the simple consumers: accepted at 26.7 s,
// aborted at its timeout at 31.8 s, its markers written 17 ms after the
// checks at 32 s).
// The final checks wait for that abort rather than fail on it.
func (w *txnWorkload) awaitsTimeoutAbort() bool {
	c := w.c
	ps, ok := c.inv.storedState(w.txnPart())
	if !ok || ps.Leader < 0 {
		return false
	}
	b := c.brokers[ps.Leader-1]
	tc := w.coords[b.id-1]
	if tc == nil || !b.live(tc.inc) {
		return false
	}
	for _, tp := range w.producers {
		if tp.cur != nil || tp.givenUpPID < 0 {
			continue
		}
		d := tc.c.Describe(tp.txnID)
		if d.Err == 0 && d.ProducerID == tp.givenUpPID && d.State != txn.StateEmpty.String() && d.State != txn.StateCompleteCommit.String() && d.State != txn.StateCompleteAbort.String() {
			if !tp.awaited {
				tp.awaited = true
				w.abortsAwaited++
				c.sched.Tracef("%s: the final checks wait for the coordinator to end producer %d's given-up transaction (%s)", tp.txnID, d.ProducerID, d.State)
			}
			return true
		}
	}
	return false
}

// finalCoordinator: the coordinator of __transaction_state's leader
// shows every transactional id with no transaction under way.
func (w *txnWorkload) finalCoordinator() bool {
	c := w.c
	ps, ok := c.inv.storedState(w.txnPart())
	if !ok || ps.Leader < 0 {
		return true // invariants.final reports it
	}
	b := c.brokers[ps.Leader-1]
	tc := w.coords[b.id-1]
	if tc == nil || !b.live(tc.inc) {
		c.fail("__transaction_state leader %d has no transaction coordinator after the quiet phase", b.id)
		return false
	}
	for _, tp := range w.producers {
		d := tc.c.Describe(tp.txnID)
		switch {
		case d.Err == kerr.TransactionalIDNotFound.Code && (len(tp.txns) == 0 || w.lostPIDs != nil && (tp.pid < 0 || w.lostPIDs[tp.pid])):
			// Never begun, or its state was lost (stateLost) since the
			// producer last initialized (or it crashed and has not yet).
		case d.Err != 0:
			c.fail("%s: DescribeTransactions at coordinator %d after the quiet phase: %v", tp.txnID, b.id, kerr.ErrorForCode(d.Err))
			return false
		case d.State != txn.StateEmpty.String() && d.State != txn.StateCompleteCommit.String() && d.State != txn.StateCompleteAbort.String():
			c.fail("%s: transaction of producer %d epoch %d still %s at coordinator %d after the quiet phase (partitions %v)", tp.txnID, d.ProducerID, d.ProducerEpoch, d.State, b.id, d.Partitions)
			return false
		}
	}
	return true
}
