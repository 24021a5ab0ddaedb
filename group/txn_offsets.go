package group

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// Transactional offset commits (TxnOffsetCommit, KIP-98) are written to
// __consumer_offsets in a transactional batch of the producer, and stay
// pending until the transaction's marker reaches that partition: a COMMIT
// marker makes them the group's committed offsets, an ABORT drops them
// (Kafka's GroupMetadataManager pendingTransactionalOffsetCommits and
// handleTxnCompletion). OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for a partition with a pending one.

// txnOffsets is producer id -> group id -> partition -> offset.
type txnOffsets map[int64]map[string]map[topicPartition]offsetEntry

func (t txnOffsets) pending(groupID string, tp topicPartition) bool {
	for _, groups := range t {
		if _, ok := groups[groupID][tp]; ok {
			return true
		}
	}
	return false
}

// hasGroup reports whether any producer has offsets pending for the group.
func (t txnOffsets) hasGroup(groupID string) bool {
	for _, groups := range t {
		if len(groups[groupID]) > 0 {
			return true
		}
	}
	return false
}

// dropGroup forgets every producer's pending offsets for the group.
func (t txnOffsets) dropGroup(groupID string) {
	for pid, groups := range t {
		delete(groups, groupID)
		if len(groups) == 0 {
			delete(t, pid)
		}
	}
}

// dropPartition forgets every producer's pending offset for one partition
// of the group.
func (t txnOffsets) dropPartition(groupID string, tp topicPartition) {
	for _, groups := range t {
		if offs := groups[groupID]; offs != nil {
			delete(offs, tp)
			if len(offs) == 0 {
				delete(groups, groupID)
			}
		}
	}
}

func (t txnOffsets) add(producerID int64, groupID string, tp topicPartition, e offsetEntry) {
	groups := t[producerID]
	if groups == nil {
		groups = map[string]map[topicPartition]offsetEntry{}
		t[producerID] = groups
	}
	offs := groups[groupID]
	if offs == nil {
		offs = map[topicPartition]offsetEntry{}
		groups[groupID] = offs
	}
	offs[tp] = e
}

type txnCommitArgs struct {
	groupID       string
	producerID    int64
	producerEpoch int16
	memberID      string // "" before v3, or for a producer outside a group
	instanceID    string
	generation    int32 // -1 before v3
	partitions    []commitPartition
}

// txnCommit validates a TxnOffsetCommit as Kafka's doTxnCommitOffsets does
// and queues its records as one transactional batch. Codes of written
// partitions are filled in by the write's completion.
func (s *shard) txnCommit(a txnCommitArgs, now time.Time, eff *effects, notify chan error) []int16 {
	codes := make([]int16, len(a.partitions))
	fail := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	g := s.groups[a.groupID]
	if g == nil {
		// Kafka creates the group: a transactional producer may commit
		// for a group it is not a member of.
		g = newGroup(a.groupID, now)
		s.groups[a.groupID] = g
	}
	switch {
	case g.state == StateDead:
		return fail(kerr.CoordinatorNotAvailable.Code)
	case a.instanceID != "" && g.static[a.instanceID] != "" && g.static[a.instanceID] != a.memberID:
		return fail(kerr.FencedInstanceID.Code)
	case a.memberID != "" && g.members[a.memberID] == nil:
		return fail(kerr.UnknownMemberID.Code)
	case a.generation >= 0 && a.generation != g.generation:
		return fail(kerr.IllegalGeneration.Code)
	}
	recs, written := s.commitRecords(g, a.partitions, codes)
	if len(recs) == 0 {
		return codes
	}
	eff.writes = append(eff.writes, write{
		records: recs,
		notify:  notify,
		// Kafka writes these with base sequence 0: the log accepts the
		// coordinator's appends without sequence checks.
		producer: &batch.Producer{ID: a.producerID, Epoch: a.producerEpoch, BaseSequence: 0},
		done: func(s *shard, err error, offset int64, _ time.Time, _ *effects) {
			for _, i := range written {
				p := a.partitions[i]
				if g.pendingCommits[p.tp]--; g.pendingCommits[p.tp] <= 0 {
					delete(g.pendingCommits, p.tp)
				}
				if err != nil {
					codes[i] = commitErrorCode(err)
					continue
				}
				if s.txnOffsets == nil {
					s.txnOffsets = txnOffsets{}
				}
				e := p.entry
				e.appendOffset = offset
				s.txnOffsets.add(a.producerID, g.id, p.tp, e)
			}
		},
	})
	return codes
}

// completeTxnOffsets applies a transaction marker of producerID to the
// shard's pending offsets: a commit takes each offset unless the group
// holds one written later in the log (Kafka's
// completePendingTxnOffsetCommit).
func (s *shard) completeTxnOffsets(producerID int64, commit bool) {
	groups := s.txnOffsets[producerID]
	delete(s.txnOffsets, producerID)
	if !commit {
		return
	}
	for groupID, offs := range groups {
		g := s.groups[groupID]
		if g == nil || g.state == StateDead {
			continue
		}
		for tp, e := range offs {
			if cur, ok := g.offsets[tp]; !ok || cur.olderThan(e) {
				g.offsets[tp] = e
			}
		}
	}
}

// txnMarker is a marker reported while its partition was loading.
type txnMarker struct {
	producerID int64
	commit     bool
}

// OnTxnMarker is called by the WriteTxnMarkers handler once a marker of
// producerID is committed on a __consumer_offsets partition this broker
// leads. A partition not led here is ignored. While the partition loads,
// the marker is kept and applied after the load: the loader may have
// stopped before it, and the producer's offsets it then holds pending are
// the ones this marker ends, since the producer's next transaction cannot
// commit offsets before its EndTxn, which waits for this marker, and not
// while the partition loads.
func (c *Coordinator) OnTxnMarker(partition int32, producerID int64, commit bool) {
	c.mu.Lock()
	ps := c.parts[partition]
	c.mu.Unlock()
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	switch {
	case ps.closed:
	case ps.loading:
		// Bounded by the producers with a transaction on this partition.
		ps.txnMarkers = append(ps.txnMarkers, txnMarker{producerID, commit})
	default:
		ps.sh.completeTxnOffsets(producerID, commit)
	}
}

// applyTxnMarkers applies the markers kept during the load; ps.mu is held.
func (ps *partitionState) applyTxnMarkers() {
	for _, m := range ps.txnMarkers {
		ps.sh.completeTxnOffsets(m.producerID, m.commit)
	}
	ps.txnMarkers = nil
}

// TxnOffsetCommit serves TxnOffsetCommit v0-3 (v3 adds the member id,
// generation and group instance id, fenced like OffsetCommit's). It
// returns once the records are durable or failed. The broker checks topic
// existence before calling.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	return awaitWrite(ctx, c.StartTxnOffsetCommit(req))
}

// PendingTxnCommit is a TxnOffsetCommit whose write is queued: the form of
// TxnOffsetCommit for a driver that cannot block (the simulation), as
// PendingCommit is OffsetCommit's.
type PendingTxnCommit struct {
	pendingCodes
	req *kmsg.TxnOffsetCommitRequest
}

// Response is the answer once Done received, or REQUEST_TIMED_OUT for
// every partition if the caller stopped waiting (timedOut).
func (pc *PendingTxnCommit) Response(timedOut bool) *kmsg.TxnOffsetCommitResponse {
	req := pc.req
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = pc.codeAt(timedOut, i)
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// StartTxnOffsetCommit validates a TxnOffsetCommit and queues its write.
func (c *Coordinator) StartTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *PendingTxnCommit {
	nowMs := c.cfg.Now().UnixMilli()
	a := txnCommitArgs{groupID: req.Group, producerID: req.ProducerID, producerEpoch: req.ProducerEpoch, generation: -1}
	if req.Version >= 3 {
		a.memberID, a.instanceID, a.generation = req.MemberID, deref(req.InstanceID), req.Generation
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			e := offsetEntry{offset: p.Offset, leaderEpoch: -1, metadata: deref(p.Metadata), commitTimestamp: nowMs, expireTimestamp: -1}
			if req.Version >= 2 {
				e.leaderEpoch = p.LeaderEpoch
			}
			a.partitions = append(a.partitions, commitPartition{tp: topicPartition{t.Topic, p.Partition}, entry: e})
		}
	}
	pc := &PendingTxnCommit{req: req, pendingCodes: pendingCodes{notify: make(chan error, 1)}}
	pc.code = c.step(req.Group, func(s *shard, now time.Time, eff *effects) {
		pc.codes = s.txnCommit(a, now, eff, pc.notify)
		pc.waiting = len(eff.writes) > 0
	})
	return pc
}

// applyBatch replays one batch: plain batches at once, transactional ones
// into their producer's pending offsets, and control batches (attributes
// bit 5; the record key is version int16, type int16 with 0 ABORT and
// 1 COMMIT) end the producer's pending transaction.
func (l *loader) applyBatch(h *batch.Header, b []byte, codecs *batch.Codecs) error {
	switch {
	case h.Control():
		if !h.HasProducerID() {
			return nil
		}
		commit, err := controlType(b, codecs)
		if err != nil {
			return err
		}
		pending := l.txn[h.ProducerID]
		delete(l.txn, h.ProducerID)
		if commit && pending != nil {
			for id, lg := range pending.groups {
				dst := l.group(id)
				for tp, e := range lg.offsets {
					if cur, ok := dst.offsets[tp]; !ok || cur.olderThan(e) {
						dst.offsets[tp] = e
					}
				}
			}
		}
		return nil
	case h.Transactional() && h.HasProducerID():
		if l.txn == nil {
			l.txn = map[int64]*loader{}
		}
		pending := l.txn[h.ProducerID]
		if pending == nil {
			pending = newLoader()
			l.txn[h.ProducerID] = pending
		}
		pending.batchOffset = h.BaseOffset
		return pending.applyRecords(b, codecs)
	}
	l.batchOffset = h.BaseOffset
	return l.applyRecords(b, codecs)
}

// controlType reads whether a control batch is a COMMIT marker.
func controlType(b []byte, codecs *batch.Codecs) (bool, error) {
	rr, err := batch.Records(b, codecs)
	if err != nil {
		return false, err
	}
	defer rr.Close()
	rec, err := rr.Next()
	if err == io.EOF {
		return false, fmt.Errorf("%w: control batch without a record", ErrCorrupt)
	}
	if err != nil {
		return false, err
	}
	if len(rec.Key) < 4 {
		return false, fmt.Errorf("%w: control record key of %d bytes", ErrCorrupt, len(rec.Key))
	}
	return binary.BigEndian.Uint16(rec.Key[2:4]) == 1, nil
}

// buildTxnOffsets hands the shard the transactional offsets whose
// transaction was still open at the end of the log; their markers come
// later through OnTxnMarker. A group known only from them is Empty.
func (l *loader) buildTxnOffsets(sh *shard, now time.Time) {
	for pid, pending := range l.txn {
		for id, lg := range pending.groups {
			if sh.groups[id] == nil {
				sh.groups[id] = newGroup(id, now)
			}
			for tp, e := range lg.offsets {
				if sh.txnOffsets == nil {
					sh.txnOffsets = txnOffsets{}
				}
				sh.txnOffsets.add(pid, id, tp, e)
			}
		}
	}
}
