package log

import (
	"fmt"
	"slices"
	"sort"

	"github.com/brook-mq/brook/protocol/batch"
)

// txnSpan is a transaction whose records are not yet stable: open
// (LastOffset -1), or decided by a marker at LastOffset that the high
// watermark has not passed yet, so the decision could still be lost to a
// leader change (Kafka's ongoingTxns and unreplicatedTxns).
type txnSpan struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// unstableTxns lists the unstable transactions of a partition, ascending
// by first offset. It is written only by holders of the Log's appendMu,
// under mu; readers hold mu.
type unstableTxns []txnSpan

func (s txnSpan) stable(hw int64) bool { return s.LastOffset >= 0 && s.LastOffset < hw }

// firstUnstable is the first offset of the oldest transaction not yet
// stable under the high watermark hw (Kafka's firstUnstableOffset).
func (u unstableTxns) firstUnstable(hw int64) (int64, bool) {
	for _, s := range u {
		if !s.stable(hw) {
			return s.FirstOffset, true
		}
	}
	return 0, false
}

// lastStableAfter is the last stable offset recorded with an aborted
// transaction of producerID ended by a marker at markerOffset: the first
// offset of the oldest other open transaction, else the offset after the
// marker (Kafka's ProducerStateManager.lastStableOffset(completedTxn)).
func (u unstableTxns) lastStableAfter(producerID, markerOffset int64) int64 {
	for _, s := range u {
		if s.LastOffset < 0 && s.ProducerID != producerID {
			return s.FirstOffset
		}
	}
	return markerOffset + 1
}

// apply records a batch's effect (from producerState.update) and drops the
// transactions that are stable below hw.
func (u unstableTxns) apply(h *batch.Header, began bool, done *completedTxn, hw int64) unstableTxns {
	if began {
		u = append(u, txnSpan{ProducerID: h.ProducerID, FirstOffset: h.BaseOffset, LastOffset: -1})
	}
	if done != nil {
		for i := range u {
			if u[i].ProducerID == done.ProducerID && u[i].LastOffset < 0 {
				u[i].LastOffset = done.LastOffset
				break
			}
		}
	}
	return u.prune(hw)
}

// prune drops the transactions that are stable below hw.
func (u unstableTxns) prune(hw int64) unstableTxns {
	return slices.DeleteFunc(u, func(s txnSpan) bool { return s.stable(hw) })
}

// openTxns lists the open transactions of a producer state, as a replay
// from a snapshot starts with them.
func (ps *producerState) openTxns() unstableTxns {
	var u unstableTxns
	for id, e := range ps.producers {
		if e.CurrentTxnFirstOffset >= 0 {
			u = append(u, txnSpan{ProducerID: id, FirstOffset: e.CurrentTxnFirstOffset, LastOffset: -1})
		}
	}
	sort.Slice(u, func(i, j int) bool { return u[i].FirstOffset < u[j].FirstOffset })
	return u
}

// openTxn returns the first offset of producerID's open transaction.
func (ps *producerState) openTxn(producerID int64) (int64, bool) {
	e := ps.producers[producerID]
	if e == nil || e.CurrentTxnFirstOffset < 0 {
		return 0, false
	}
	return e.CurrentTxnFirstOffset, true
}

// abortEntry is the .txnindex entry a marker adds, if any: only an ABORT
// that ends an open transaction is indexed.
func abortEntry(ps *producerState, u unstableTxns, h *batch.Header, marker *TxnMarker) (AbortedTxn, bool) {
	if marker == nil || marker.Commit {
		return AbortedTxn{}, false
	}
	first, ok := ps.openTxn(h.ProducerID)
	if !ok {
		return AbortedTxn{}, false
	}
	return AbortedTxn{
		ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset,
		LastStableOffset: u.lastStableAfter(h.ProducerID, h.BaseOffset),
	}, true
}

// LastStableOffset bounds read_committed reads: the first offset of the
// oldest transaction not yet stable, if below the high watermark (and
// never below the log start offset, as Kafka), else the high watermark.
func (l *Log) LastStableOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastStableOffsetLocked()
}

// lastStableOffsetLocked is LastStableOffset; the caller holds mu.
func (l *Log) lastStableOffsetLocked() int64 {
	hw := l.highWatermark
	if first, ok := l.unstable.firstUnstable(hw); ok && first < hw {
		return max(first, l.logStartOffset)
	}
	return hw
}

// AbortedTransactions returns the aborted transactions that overlap the
// offsets [fetchOffset, upperBound), from the .txnindex of the segment
// holding fetchOffset and of later segments, as Kafka's
// collectAbortedTransactions: entries whose marker is at or after
// fetchOffset and whose first offset is below upperBound. A read_committed
// consumer drops those transactions' records from what it fetched.
func (l *Log) AbortedTransactions(fetchOffset, upperBound int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > fetchOffset }) - 1
	var out []AbortedTxn
	for i = max(i, 0); i < len(l.segments); i++ {
		var complete bool
		if out, complete = l.segments[i].txnIndex.collect(out, fetchOffset, upperBound); complete {
			break
		}
	}
	return out
}

// AppendTxnMarker writes the end of a transaction as the partition leader,
// for a coordinator (WriteTxnMarkers): it checks the marker's producer and
// coordinator epochs against the producer state and appends the control
// batch under leaderEpoch. The transaction's records become stable once
// the high watermark passes the marker.
func (l *Log) AppendTxnMarker(m TxnMarker, leaderEpoch int32) (AppendInfo, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.producers.checkMarker(m); err != nil {
		return AppendInfo{}, err
	}
	nowMs := l.now().UnixMilli()
	b, err := buildMarkerBatch(m, nowMs)
	if err != nil {
		return AppendInfo{}, err
	}
	appendTime := int64(-1)
	if l.cfg.LogAppendTime {
		// As Kafka's validator does for every leader append.
		appendTime = nowMs
		batch.SetMaxTimestamp(b, true, nowMs)
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		return AppendInfo{}, fmt.Errorf("%w: marker batch: %w", ErrCorrupt, err)
	}
	h.BaseOffset, h.PartitionLeaderEpoch = l.logEndOffset, leaderEpoch
	batch.SetBaseOffset(b, h.BaseOffset)
	batch.SetPartitionLeaderEpoch(b, leaderEpoch)
	logStart, err := l.appendBatchLocked(b, &h)
	if err != nil {
		return AppendInfo{}, err
	}
	return AppendInfo{FirstOffset: h.BaseOffset, LastOffset: h.BaseOffset, LogAppendTime: appendTime, LogStartOffset: logStart, RecordCount: 1}, nil
}

// abortedSet indexes aborted transactions by producer, for the cleaner:
// a transactional batch of a producer inside one of its aborted spans
// belongs to an aborted transaction.
type abortedSet map[int64][]AbortedTxn

// abortedTxnsLocked collects every aborted transaction overlapping
// [from, upperBound); the caller holds mu.
func (l *Log) abortedTxnsLocked(from, upperBound int64) abortedSet {
	set := abortedSet{}
	for _, s := range l.segments {
		for _, a := range s.txnIndex.entries {
			if a.LastOffset >= from && a.FirstOffset < upperBound {
				set[a.ProducerID] = append(set[a.ProducerID], a)
			}
		}
	}
	return set
}

// contains reports whether the batch h is data of an aborted transaction.
func (set abortedSet) contains(h *batch.Header) bool {
	if !h.Transactional() || h.Control() {
		return false
	}
	for _, a := range set[h.ProducerID] {
		if h.BaseOffset >= a.FirstOffset && h.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}
