package log

import "sort"

// epochCache maps each leader epoch to the first offset written under it
// (Kafka's LeaderEpochFileCache). It is guarded by the Log's mu; the Log
// persists it to leader-epoch-checkpoint whenever it changes.
//
// Invariant: epochs and start offsets both strictly increase.
type epochCache struct {
	entries []epochEntry
}

func (c *epochCache) latest() (epochEntry, bool) {
	if len(c.entries) == 0 {
		return epochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at startOffset and reports whether the
// cache changed. Entries that would break monotonicity (an epoch at or
// above, or an offset at or past, the new one) are dropped first, as
// Kafka's assign does.
func (c *epochCache) assign(epoch int32, startOffset int64) bool {
	if epoch < 0 {
		return false
	}
	if l, ok := c.latest(); ok && l.Epoch == epoch && l.StartOffset <= startOffset {
		return false
	}
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.Epoch < epoch && e.StartOffset < startOffset {
			kept = append(kept, e)
		}
	}
	c.entries = append(kept, epochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// onlyOlderBefore reports whether every epoch starting before startOffset
// is older than epoch: then assign(epoch, startOffset) drops only entries
// starting at or past startOffset.
func (c *epochCache) onlyOlderBefore(epoch int32, startOffset int64) bool {
	for _, e := range c.entries {
		if e.StartOffset < startOffset && e.Epoch >= epoch {
			return false
		}
	}
	return true
}

// truncateFromEnd drops epochs starting at or after endOffset (log truncated to endOffset).
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= endOffset })
	changed := i < len(c.entries)
	c.entries = c.entries[:i]
	return changed
}

// truncateFromStart forgets epochs wholly before startOffset; the epoch
// holding startOffset now starts there.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > startOffset })
	if i == 0 {
		return false
	}
	last := c.entries[i-1]
	if i == 1 && last.StartOffset == startOffset {
		return false
	}
	rest := append([]epochEntry{{Epoch: last.Epoch, StartOffset: startOffset}}, c.entries[i:]...)
	c.entries = rest
	return true
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's endOffsetFor does:
// for the latest epoch the log end offset; for an older one, the largest
// known epoch <= requested and the start offset of the next epoch; for an
// epoch below all known ones, the requested epoch and the first start
// offset; -1, -1 when unknown.
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested < 0 {
		return -1, -1
	}
	l, ok := c.latest()
	if ok && l.Epoch == requested {
		return requested, logEndOffset
	}
	hi := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > requested })
	if hi == len(c.entries) {
		return -1, -1
	}
	if hi == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

// epochFor returns the epoch under which offset was written, -1 if unknown.
func (c *epochCache) epochFor(offset int64) int32 {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset })
	if i == 0 {
		return -1
	}
	return c.entries[i-1].Epoch
}

func (c *epochCache) snapshot() []epochEntry { return append([]epochEntry(nil), c.entries...) }
