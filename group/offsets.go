package group

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type commitPartition struct {
	tp    topicPartition
	entry offsetEntry
}

type commitArgs struct {
	groupID    string
	memberID   string
	instanceID string
	generation int32
	partitions []commitPartition
	// unknownGroupNotFound is OffsetCommit v9+: a member's commit to a
	// group that does not exist gets GROUP_ID_NOT_FOUND instead of
	// ILLEGAL_GENERATION.
	unknownGroupNotFound bool
}

// commit validates an OffsetCommit and, when valid, queues the records. The
// returned codes are final for partitions not written; for written ones
// they are filled in by the write's completion, which the caller awaits
// through notify.
func (s *shard) commit(a commitArgs, now time.Time, eff *effects, notify chan error) []int16 {
	codes := make([]int16, len(a.partitions))
	fail := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	g := s.groups[a.groupID]
	if g == nil {
		if a.generation >= 0 {
			// A member of a group this coordinator does not know: the
			// group moved or the generation is stale.
			if a.unknownGroupNotFound {
				return fail(kerr.GroupIDNotFound.Code)
			}
			return fail(kerr.IllegalGeneration.Code)
		}
		// Simple consumers (no group management) may commit to a group
		// that does not exist yet.
		g = newGroup(a.groupID, now)
		s.groups[a.groupID] = g
	}
	skip := s.faults.CommitSkipsGenerationCheck && a.generation >= 0
	if code := g.validateCommit(a.memberID, a.instanceID, a.generation); code != 0 && !skip {
		return fail(code)
	}
	switch m := g.members[a.memberID]; {
	case skip && m == nil:
	case g.state == StateCompletingRebalance && !skip:
		// The member has the new generation but not its assignment yet.
		return fail(kerr.RebalanceInProgress.Code)
	case g.state == StateStable, g.state == StatePreparingRebalance:
		// Commits stay allowed while preparing a rebalance: the member
		// learns about the rebalance from its next heartbeat.
		resetHeartbeat(m, now)
	}
	recs, written := s.commitRecords(g, a.partitions, codes)
	if len(recs) == 0 {
		return codes
	}
	eff.writes = append(eff.writes, write{
		records: recs,
		notify:  notify,
		done: func(s *shard, err error, offset int64, _ time.Time, _ *effects) {
			live := s.groups[g.id] == g
			for _, i := range written {
				p := a.partitions[i]
				if g.pendingCommits[p.tp]--; g.pendingCommits[p.tp] <= 0 {
					delete(g.pendingCommits, p.tp)
				}
				if err != nil {
					codes[i] = commitErrorCode(err)
					continue
				}
				if live {
					e := p.entry
					e.appendOffset = offset
					g.offsets[p.tp] = e
				}
			}
		},
	})
	return codes
}

// javaLength is the length of s as Java counts it (UTF-16 code units),
// which offset.metadata.max.bytes is compared with.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

func (g *group) validateCommit(memberID, instanceID string, generation int32) int16 {
	if g.state == StateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && g.state == StateEmpty {
		// Admin clients and consumers without group management may
		// commit to an empty group whatever member id they send.
		return 0
	}
	if generation >= 0 || memberID != "" || instanceID != "" {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
		return 0
	}
	if g.state != StateEmpty {
		// Once the group has members, only they may commit.
		return kerr.UnknownMemberID.Code
	}
	return 0
}

type fetchedOffset struct {
	tp          topicPartition
	offset      int64
	leaderEpoch int32
	metadata    string
	err         int16
}

// fetchOffsets answers OffsetFetch for one group; tps nil means all
// partitions with a committed offset.
func (s *shard) fetchOffsets(groupID string, tps []topicPartition, requireStable bool) []fetchedOffset {
	g := s.groups[groupID]
	if g == nil || g.state == StateDead {
		out := make([]fetchedOffset, 0, len(tps))
		for _, tp := range tps {
			out = append(out, fetchedOffset{tp: tp, offset: -1, leaderEpoch: -1})
		}
		return out
	}
	if tps == nil {
		tps = g.sortedOffsetPartitions()
	}
	out := make([]fetchedOffset, 0, len(tps))
	for _, tp := range tps {
		f := fetchedOffset{tp: tp, offset: -1, leaderEpoch: -1}
		if o, ok := g.offsets[tp]; ok {
			f.offset, f.leaderEpoch, f.metadata = o.offset, o.leaderEpoch, o.metadata
		}
		if requireStable && (g.pendingCommits[tp] > 0 || !s.faults.StableSkipsTxnOffsets && s.txnOffsets.pending(groupID, tp)) {
			f = fetchedOffset{tp: tp, offset: -1, leaderEpoch: -1, err: kerr.UnstableOffsetCommit.Code}
		}
		out = append(out, f)
	}
	return out
}

func (g *group) sortedOffsetPartitions() []topicPartition {
	tps := make([]topicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
	return tps
}

// computeSubscribedTopics parses the consumer protocol's subscriptions; nil
// means unknown, which callers treat as "maybe subscribed".
func (g *group) computeSubscribedTopics() map[string]bool {
	if g.protocolType != consumerProtocolType {
		return nil
	}
	topics := map[string]bool{}
	if len(g.members) == 0 {
		return topics
	}
	if g.protocolName == "" {
		return nil
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocolName)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

func (g *group) isSubscribedTo(topic string) bool {
	return g.subscribedTopics == nil || g.subscribedTopics[topic]
}

// expiredOffsets applies offsets.retention.minutes as Kafka 2.1+ does
// (KIP-211): an empty group's offsets expire a retention period after the
// group became empty; a simple consumer's, after their commit; a stable
// consumer group's, after their commit if no member subscribes to the topic.
func (g *group) expiredOffsets(now time.Time, retention time.Duration) []topicPartition {
	nowMs, retentionMs := now.UnixMilli(), retention.Milliseconds()
	var base func(o offsetEntry) int64
	var subscribed map[string]bool
	switch {
	case g.protocolType != "" && g.state == StateEmpty:
		base = func(o offsetEntry) int64 {
			if g.stateTimestamp.IsZero() {
				return o.commitTimestamp
			}
			return g.stateTimestamp.UnixMilli()
		}
	case g.protocolType == consumerProtocolType && g.subscribedTopics != nil && g.state == StateStable:
		base = func(o offsetEntry) int64 { return o.commitTimestamp }
		subscribed = g.subscribedTopics
	case g.protocolType == "":
		base = func(o offsetEntry) int64 { return o.commitTimestamp }
	default:
		return nil
	}
	var out []topicPartition
	for _, tp := range g.sortedOffsetPartitions() {
		o := g.offsets[tp]
		if subscribed[tp.topic] || g.pendingCommits[tp] > 0 {
			continue
		}
		expired := nowMs-base(o) >= retentionMs
		if o.expireTimestamp >= 0 {
			expired = nowMs >= o.expireTimestamp
		}
		if expired {
			out = append(out, tp)
		}
	}
	return out
}

// cleanupGroup removes the given offsets and, if that leaves an empty group
// with nothing to remember, the group itself; it returns the tombstones.
func (s *shard) cleanupGroup(g *group, remove []topicPartition, now time.Time) []record {
	var recs []record
	for _, tp := range remove {
		if _, ok := g.offsets[tp]; ok {
			delete(g.offsets, tp)
			recs = append(recs, offsetTombstone(g.id, tp))
		}
		// Kafka's removeOffsets drops the partition's pending
		// transactional offsets too; the loader does the same on the
		// tombstone.
		s.txnOffsets.dropPartition(g.id, tp)
	}
	// As Kafka's hasOffsets, pending transactional offsets keep the group.
	if g.state == StateEmpty && len(g.offsets) == 0 && len(g.pendingCommits) == 0 && len(g.pending) == 0 && !s.txnOffsets.hasGroup(g.id) {
		g.transition(StateDead, now)
		delete(s.groups, g.id)
		recs = append(recs, groupTombstone(g.id))
	}
	return recs
}

// expireOffsets runs the periodic offsets retention check over the shard.
func (s *shard) expireOffsets(now time.Time, eff *effects) {
	var recs []record
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := s.groups[id]
		recs = append(recs, s.cleanupGroup(g, g.expiredOffsets(now, s.limits.offsetsRetention), now)...)
	}
	if len(recs) > 0 {
		eff.writes = append(eff.writes, write{records: recs})
	}
}

// deleteGroup handles one group of DeleteGroups.
func (s *shard) deleteGroup(groupID string, now time.Time) (int16, []record) {
	g := s.groups[groupID]
	if g == nil || g.state == StateDead {
		return kerr.GroupIDNotFound.Code, nil
	}
	if g.state != StateEmpty {
		return kerr.NonEmptyGroup.Code, nil
	}
	recs := make([]record, 0, len(g.offsets)+1)
	for _, tp := range g.sortedOffsetPartitions() {
		recs = append(recs, offsetTombstone(g.id, tp))
	}
	recs = append(recs, groupTombstone(g.id))
	g.transition(StateDead, now)
	delete(s.groups, g.id)
	// The group's pending transactional offsets go with it, as in Kafka,
	// where they live in the group object: a new group of the same name
	// owes nothing to the old one's transactions.
	s.txnOffsets.dropGroup(g.id)
	return 0, recs
}

// deleteOffsets handles OffsetDelete: an empty group loses any offsets; a
// consumer group with members keeps those of topics it subscribes to.
func (s *shard) deleteOffsets(groupID string, tps []topicPartition, now time.Time) (int16, []int16, []record) {
	g := s.groups[groupID]
	if g == nil || g.state == StateDead {
		return kerr.GroupIDNotFound.Code, nil, nil
	}
	codes := make([]int16, len(tps))
	var remove []topicPartition
	switch {
	case g.state == StateEmpty:
		remove = tps
	case g.protocolType == consumerProtocolType:
		for i, tp := range tps {
			if g.isSubscribedTo(tp.topic) {
				codes[i] = kerr.GroupSubscribedToTopic.Code
				continue
			}
			remove = append(remove, tp)
		}
	default:
		return kerr.NonEmptyGroup.Code, nil, nil
	}
	return 0, codes, s.cleanupGroup(g, remove, now)
}

type groupSummary struct {
	state        string
	protocolType string
	protocolName string
	members      []memberSummary
}

type memberSummary struct {
	id, instanceID, clientID, clientHost string
	metadata, assignment                 []byte
}

// describe reports a group as DescribeGroups shows it: member metadata and
// assignments only once the group is Stable. found is false for unknown
// groups, which Kafka reports as Dead.
func (s *shard) describe(groupID string) (groupSummary, bool) {
	g := s.groups[groupID]
	if g == nil {
		return groupSummary{state: StateDead.String()}, false
	}
	sum := groupSummary{state: g.state.String(), protocolType: g.protocolType}
	stable := g.state == StateStable
	if stable {
		sum.protocolName = g.protocolName
	}
	for _, id := range g.memberOrder {
		m := g.members[id]
		ms := memberSummary{id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost}
		if stable {
			ms.metadata, ms.assignment = m.metadataFor(g.protocolName), m.assignment
		}
		sum.members = append(sum.members, ms)
	}
	return sum, true
}

// removeTopicOffsets drops every offset of the topics in every group of the
// shard, as Kafka does when topics are deleted, so that a re-created topic
// does not resume at stale offsets.
func (s *shard) removeTopicOffsets(topics map[string]bool, now time.Time, eff *effects) {
	var recs []record
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := s.groups[id]
		var remove []topicPartition
		for _, tp := range g.sortedOffsetPartitions() {
			if topics[tp.topic] {
				remove = append(remove, tp)
			}
		}
		if len(remove) > 0 {
			recs = append(recs, s.cleanupGroup(g, remove, now)...)
		}
	}
	if len(recs) > 0 {
		eff.writes = append(eff.writes, write{records: recs})
	}
}

// commitRecords builds the offset records of a commit to g, one per
// partition whose metadata fits offset.metadata.max.bytes (the others get
// OFFSET_METADATA_TOO_LARGE in codes), counts them as pending, and returns
// them with the indexes of the partitions they are for. OffsetCommit and
// TxnOffsetCommit share it.
func (s *shard) commitRecords(g *group, partitions []commitPartition, codes []int16) (recs []record, written []int) {
	for i, p := range partitions {
		if javaLength(p.entry.metadata) > s.limits.maxMetadataSize {
			codes[i] = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		recs = append(recs, offsetRecord(g.id, p.tp, p.entry))
		written = append(written, i)
		g.pendingCommits[p.tp]++
	}
	return recs, written
}
