package group

// Counts are the group coordinator's gauges (Kafka's GroupMetadataManager
// NumGroups, NumGroupsStable, ... and NumOffsets) over the partitions this
// broker leads.
type Counts struct {
	Groups  int
	ByState [StateDead + 1]int
	Offsets int
}

// CommittedOffset is one group's committed offset of one partition.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// Stats counts the loaded groups by state and their offsets, and appends
// every committed offset to buf (for consumer lag), reusing it. Each
// partition's lock is held only while its own groups are read; pending
// transactional offsets are not committed and are left out, as
// OffsetFetch leaves them out.
func (c *Coordinator) Stats(buf []CommittedOffset) (Counts, []CommittedOffset) {
	c.mu.Lock()
	parts := make([]*partitionState, 0, len(c.parts))
	for _, ps := range c.parts {
		parts = append(parts, ps)
	}
	c.mu.Unlock()
	var n Counts
	for _, ps := range parts {
		ps.mu.Lock()
		if ps.sh != nil && !ps.loading && !ps.closed {
			for _, g := range ps.sh.groups {
				n.Groups++
				n.ByState[g.state]++
				n.Offsets += len(g.offsets)
				for tp, o := range g.offsets {
					buf = append(buf, CommittedOffset{Group: g.id, Topic: tp.topic, Partition: tp.partition, Offset: o.offset})
				}
			}
		}
		ps.mu.Unlock()
	}
	return n, buf
}
