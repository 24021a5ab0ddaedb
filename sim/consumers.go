package sim

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
)

// The consumer workload: on each producer partition a consumer at
// read_uncommitted and one at read_committed fetch from a broker that
// believes it leads the partition (fresh or stale metadata). The broker's
// side is what broker/01_fetch.go's readFetch does with the real calls:
// the bound is the real Partition.HighWatermark or, at read_committed,
// LastStableOffset; the records are the real Log.Read up to it; the
// aborted transactions are the real Log.AbortedTransactions (the
// .txnindex). The consumer's side filters as Kafka's client does: a
// transactional batch of a producer whose aborted transaction has begun
// is dropped up to that producer's ABORT marker, control batches are
// never delivered.
//
// Invariants: a broker never returns a record at or above the bound it
// read with; two reads of one offset never disagree, nor a read and the
// final log (a record below a HW is never lost or changed); a
// transactional record is never delivered at two offsets (the producer
// is idempotent); read_committed never delivers a record of an aborted
// or undecided transaction; after the quiet phase each consumer has
// reached its bound, having delivered every record of the final log below
// it (at read_committed, except those of aborted transactions).

// consumerFetchMaxBytes is the consumer's partition max bytes.
const consumerFetchMaxBytes = 16 << 10

type consumer struct {
	part      int32
	committed bool // read_committed
	pos       int64
	seq       int
	inFlight  bool
	deadline  time.Time // of the fetch in flight
	// got are the offsets delivered; passed, those read and not
	// delivered (control records, aborted transactions), as read.
	got    map[int64]bool
	passed map[int64]readInfo
}

func (cs *consumer) String() string {
	iso := "read_uncommitted"
	if cs.committed {
		iso = "read_committed"
	}
	return fmt.Sprintf("p%d %s consumer", cs.part, iso)
}

type consumerWorkload struct {
	c         *Cluster
	consumers []*consumer
	// seen is every record delivered by offset, per partition; seenAt is
	// where each transactional record was delivered.
	seen   map[int32]map[int64]string
	seenAt map[string]int64
	// read is how each offset in seen was read; losses, the logs at each
	// loss event (reads_lost.go).
	read   map[int32]map[int64]readInfo
	losses map[int32][]lossEvent
	// records counts deliveries, for Stats; readsLost, the deliveries
	// that disagreed with another or the final log over a record lost as
	// Kafka loses them (reads_lost.go).
	records, readsLost int
}

// ConsumerFaults are bugs a test switches on to see the consumer
// invariants fail (the read path here is the simulation's model of
// readFetch, so its bugs are modelled too).
type ConsumerFaults struct {
	// ReadToLogEnd reads read_uncommitted up to the log end offset, as a
	// fetch that forgot the HW would.
	ReadToLogEnd bool
	// ReadCommittedToHW bounds read_committed reads by the HW, not the LSO.
	ReadCommittedToHW bool
	// NoAbortedList sends no aborted transactions to read_committed.
	NoAbortedList bool
	// NoBoundCheck skips the check at read time, so that only the
	// consumers' later checks can catch a read past the HW.
	NoBoundCheck bool
}

func newConsumerWorkload(c *Cluster) *consumerWorkload {
	w := &consumerWorkload{c: c, seen: map[int32]map[int64]string{}, seenAt: map[string]int64{}, read: map[int32]map[int64]readInfo{}, losses: map[int32][]lossEvent{}}
	for part := range c.cfg.Partitions {
		w.seen[part] = map[int64]string{}
		w.read[part] = map[int64]readInfo{}
		for _, committed := range []bool{false, true} {
			w.consumers = append(w.consumers, &consumer{part: part, committed: committed, got: map[int64]bool{}, passed: map[int64]readInfo{}})
		}
	}
	return w
}

// schedule runs the consumers: every 80-200 ms each that has no fetch in
// flight sends the next, to the end of the run (a fetch takes what there
// is, up to 16 KiB: the consumers keep up with the producers at this
// rate, and more often costs a seed events without finding more).
func (w *consumerWorkload) schedule() {
	var next func()
	next = func() {
		for _, cs := range w.consumers {
			if cs.inFlight && !w.c.sched.Now().Before(cs.deadline) {
				cs.inFlight = false // no answer: the request timed out
			}
			if !cs.inFlight {
				w.fetch(cs)
			}
		}
		w.c.sched.After(w.c.sched.Between(80*time.Millisecond, 200*time.Millisecond), "~consumers fetch", next)
	}
	w.c.sched.After(time.Second, "~consumers fetch", next)
}

// fetchAnswer is what a Fetch answer carries for one partition.
type fetchAnswer struct {
	data    []byte
	aborted []log.AbortedTxn
	from    int64
	hw      int64 // the leader's HW when it read
}

func (w *consumerWorkload) fetch(cs *consumer) {
	c := w.c
	leaders := c.believedLeaders(cs.part)
	if len(leaders) == 0 {
		return
	}
	b := leaders[c.sched.Rand.Intn(len(leaders))]
	inc := b.incarnation
	cs.inFlight = true
	cs.seq++
	seq := cs.seq
	// Checked by the fetch loop rather than by an event of its own.
	cs.deadline = c.sched.Now().Add(2*c.cfg.Net.MaxDelay + controller.SendRetryBackoff)
	pos := cs.pos
	c.net.Send(clientNode, b.id, "Fetch (consumer)", func() {
		ans, ok := w.serve(b, inc, cs, pos)
		if !ok {
			return // an error answer: the consumer retries after its timeout
		}
		c.net.Send(b.id, clientNode, "Fetch (consumer) answer", func() {
			if cs.seq != seq || cs.pos != pos {
				return // a duplicate or a late answer
			}
			cs.inFlight = false
			w.deliver(cs, ans)
		})
	})
}

// serve is the leader's side: readFetch's bound, read and aborted list.
func (w *consumerWorkload) serve(b *Broker, inc int, cs *consumer, pos int64) (fetchAnswer, bool) {
	c := w.c
	if !b.live(inc) {
		return fetchAnswer{}, false
	}
	p := b.rm.Get(topic, cs.part)
	if p == nil || !p.IsLeader() {
		return fetchAnswer{}, false // NOT_LEADER_OR_FOLLOWER
	}
	l := p.Log()
	if pos < l.LogStartOffset() || pos > l.LogEndOffset() {
		return fetchAnswer{}, false // OFFSET_OUT_OF_RANGE; the consumer keeps its position
	}
	f := c.cfg.ConsumerFaults
	// bound is what readFetch reads up to; read, what the faults make of it.
	bound := p.HighWatermark()
	if cs.committed {
		bound = p.LastStableOffset()
	}
	read := bound
	switch {
	case cs.committed && f.ReadCommittedToHW:
		read = p.HighWatermark()
	case !cs.committed && f.ReadToLogEnd:
		read = l.LogEndOffset()
	}
	sl, err := l.Read(pos, consumerFetchMaxBytes, read, true)
	if err != nil {
		c.fail("broker %d: %s read at %d: %v", b.id, cs, pos, err)
		return fetchAnswer{}, false
	}
	if sl.Size == 0 {
		return fetchAnswer{from: pos}, true
	}
	data, err := sl.ReadInto(nil)
	if err != nil {
		c.fail("broker %d: %s read at %d: %v", b.id, cs, pos, err)
		return fetchAnswer{}, false
	}
	if sl.LastOffset >= bound && !f.NoBoundCheck {
		c.fail("broker %d (HW %d, LSO %d) returned %s records up to offset %d, at or above its bound %d",
			b.id, p.HighWatermark(), p.LastStableOffset(), cs, sl.LastOffset, bound)
		return fetchAnswer{}, false
	}
	ans := fetchAnswer{data: data, from: pos, hw: p.HighWatermark()}
	if cs.committed && !f.NoAbortedList {
		ans.aborted = l.AbortedTransactions(pos, sl.LastOffset+1)
	}
	return ans, true
}

// deliver is the consumer's side: Kafka's client filtering, then the checks.
func (w *consumerWorkload) deliver(cs *consumer, ans fetchAnswer) {
	c := w.c
	aborted := append([]log.AbortedTxn(nil), ans.aborted...)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	aborting := map[int64]bool{}
	for data := ans.data; len(data) > 0; {
		h, err := batch.ParseHeader(data)
		if err != nil {
			c.fail("%s: fetched batch: %v", cs, err)
			return
		}
		_, recs, err := batch.ReadRecords(data[:h.Size()], nil)
		if err != nil {
			c.fail("%s: fetched batch at %d: %v", cs, h.BaseOffset, err)
			return
		}
		data = data[h.Size():]
		cs.pos = h.LastOffset() + 1
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			aborting[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		info := func(off int64) readInfo { return readInfo{h.PartitionLeaderEpoch, off < ans.hw} }
		if h.Control() || h.Transactional() && aborting[h.ProducerID] {
			for off := h.BaseOffset; off <= h.LastOffset(); off++ {
				cs.passed[off] = info(off)
			}
		}
		if h.Control() {
			if len(recs) == 1 && len(recs[0].Key) >= 4 && binary.BigEndian.Uint16(recs[0].Key[2:4]) == 0 { // ABORT
				delete(aborting, h.ProducerID)
			}
			continue
		}
		if h.Transactional() && aborting[h.ProducerID] {
			continue
		}
		for i, r := range recs {
			off := h.BaseOffset + int64(i)
			if !w.check(cs, off, string(r.Value), info(off)) {
				return
			}
		}
	}
}

// check is the invariants on one delivered record.
func (w *consumerWorkload) check(cs *consumer, off int64, v string, info readInfo) bool {
	c := w.c
	w.records++
	cs.got[off] = true
	if prev, ok := w.seen[cs.part][off]; ok && prev != v {
		w.readsLost++
		switch prevInfo := w.read[cs.part][off]; {
		case w.lostLegitimately(cs.part, off, prevInfo):
			c.sched.Tracef("%s: p%d offset %d delivered as %q, earlier as %q, lost since", cs, cs.part, off, v, prev)
		case w.lostLegitimately(cs.part, off, info):
			// A leader that has not heard it was deposed serves a record
			// lost since; the other delivery stays the offset's.
			c.sched.Tracef("%s: p%d offset %d delivered as %q, lost since, earlier as %q", cs, cs.part, off, v, prev)
			return true
		default:
			c.fail("%s: p%d offset %d delivered as %q, earlier as %q", cs, cs.part, off, v, prev)
			return false
		}
	}
	w.seen[cs.part][off] = v
	w.read[cs.part][off] = info
	key, ok := txnKey(v)
	if !ok {
		return true
	}
	if at, ok := w.seenAt[v]; ok && at != off {
		c.fail("%s: transactional record %q delivered at offsets %d and %d", cs, v, at, off)
		return false
	}
	w.seenAt[v] = off
	if !cs.committed || c.txns == nil {
		return true
	}
	switch commit, decided := c.txns.outcome[key]; {
	case !decided:
		c.fail("%s delivered %q at %d of transaction %s, not yet decided", cs, v, off, key)
		return false
	case !commit:
		c.fail("%s delivered %q at %d of transaction %s, aborted", cs, v, off, key)
		return false
	}
	return true
}

// final: every record delivered is in the final log unchanged, and each
// consumer has reached its bound, having delivered every record below it
// that it should have.
func (w *consumerWorkload) final() {
	c := w.c
	for _, cs := range w.consumers {
		ps, ok := c.inv.storedState(cs.part)
		if !ok || ps.Leader < 0 {
			return // invariants.final reports it
		}
		p := c.brokers[ps.Leader-1].rm.Get(topic, cs.part)
		if p == nil {
			return
		}
		hw := p.HighWatermark()
		bound := hw
		if cs.committed {
			bound = p.LastStableOffset()
		}
		values, err := readValues(p.Log(), hw)
		if err != nil {
			c.fail("p%d: read leader %d's log: %v", cs.part, ps.Leader, err)
			return
		}
		for _, off := range sortedKeys(cs.got) {
			if got, ok := values[off]; (!ok || got != w.seen[cs.part][off]) && !w.lostLegitimately(cs.part, off, w.read[cs.part][off]) {
				c.fail("%s delivered %q at offset %d, but leader %d (HW %d) has %q there", cs, w.seen[cs.part][off], off, ps.Leader, hw, got)
				return
			}
		}
		if cs.pos < bound {
			c.fail("%s at offset %d after the quiet phase, below its bound %d (leader %d)", cs, cs.pos, bound, ps.Leader)
			return
		}
		for _, off := range sortedKeys(values) {
			v := values[off]
			if off >= bound || cs.got[off] {
				continue
			}
			if info, ok := cs.passed[off]; ok && w.lostLegitimately(cs.part, off, info) {
				continue // passed over in a history lost since (reads_lost.go)
			}
			key, txn := txnKey(v)
			if !cs.committed || !txn || c.txns == nil || c.txns.outcome[key] {
				c.fail("%s never delivered %q at offset %d (leader %d, bound %d)", cs, v, off, ps.Leader, bound)
				return
			}
		}
	}
}

// sortedKeys are a map's keys in order, so that what iterates them (and
// a failure that names the first) is the same in every replay.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
