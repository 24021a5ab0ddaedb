package log

import (
	"cmp"
	"slices"

	"github.com/brook-mq/brook/protocol/batch"
)

// cleanTxns is Kafka's CleanedTransactionMetadata: through one cleaning,
// which transactions the cleaner has seen a batch of, so that it can tell
// when a transaction marker no longer has data in the log. Kafka keeps a
// marker while one of its transaction's batches (kept, emptied, or being
// dropped by this very cleaning) comes before it; the first cleaning that
// sees none makes the marker removable, and it goes once its delete
// horizon passes (KIP-534). A kept ABORT marker keeps its .txnindex
// entry; a removable one loses it, since no record is left to abort.
type cleanTxns struct {
	pending   []AbortedTxn // aborted transactions not yet reached, by first offset
	aborted   map[int64]*abortedSeen
	committed map[int64]bool // producers with a batch seen in an open committed transaction
}

type abortedSeen struct {
	txn  AbortedTxn
	seen bool // a batch of the transaction was read this cleaning
}

func newCleanTxns(set abortedSet) *cleanTxns {
	c := &cleanTxns{aborted: map[int64]*abortedSeen{}, committed: map[int64]bool{}}
	for _, txns := range set {
		c.pending = append(c.pending, txns...)
	}
	slices.SortFunc(c.pending, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return c
}

// reach starts tracking the aborted transactions that begin at or before
// offset.
func (c *cleanTxns) reach(offset int64) {
	for len(c.pending) > 0 && c.pending[0].FirstOffset <= offset {
		a := c.pending[0]
		c.pending = c.pending[1:]
		if _, ok := c.aborted[a.ProducerID]; !ok {
			c.aborted[a.ProducerID] = &abortedSeen{txn: a}
		}
	}
}

// onBatch records a data batch read by the cleaner.
func (c *cleanTxns) onBatch(h *batch.Header) {
	c.reach(h.LastOffset())
	if !h.Transactional() {
		return
	}
	if a, ok := c.aborted[h.ProducerID]; ok {
		a.seen = true
	} else {
		c.committed[h.ProducerID] = true
	}
}

// onMarker records a control batch (m nil for an empty one or one of
// another type) and reports whether it may be removed, and the aborted
// transaction whose .txnindex entry stays with it, if any.
func (c *cleanTxns) onMarker(h *batch.Header, m *TxnMarker, empty bool) (removable bool, keep *AbortedTxn) {
	c.reach(h.LastOffset())
	switch {
	case empty:
		return true, nil // an already cleaned marker
	case m == nil:
		return false, nil // an unknown control type stays, as in Kafka
	case m.Commit:
		seen := c.committed[h.ProducerID]
		delete(c.committed, h.ProducerID)
		return !seen, nil
	}
	a, ok := c.aborted[h.ProducerID]
	delete(c.aborted, h.ProducerID)
	if ok && a.seen {
		return false, &a.txn
	}
	return true, nil
}
