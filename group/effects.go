package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// joinResult is the version-independent JoinGroup answer.
type joinResult struct {
	err          int16
	memberID     string
	generation   int32
	protocolType string // "" = null
	protocolName string // "" = null
	leader       string
	members      []joinMember // only for the leader
	// skipAssignment tells a restarted static leader not to assign.
	skipAssignment bool
}

type joinMember struct {
	id         string
	instanceID string
	metadata   []byte
}

type syncResult struct {
	err          int16
	protocolType string
	protocolName string
	assignment   []byte
}

func joinError(memberID string, code int16) joinResult {
	return joinResult{err: code, memberID: memberID, generation: -1}
}

// record is one key/value for __consumer_offsets; a nil value is a tombstone.
type record struct {
	key, value []byte
}

// write asks the driver to append records to the shard's partition. done
// runs under the shard lock once the append is acknowledged or failed, with
// the offset of the write's first record.
type write struct {
	records []record
	done    func(s *shard, err error, offset int64, now time.Time, eff *effects)
	// group is the group whose deadlines done may move, for the driver's
	// timer.
	group string
	// notify, if set, receives the append's error after done ran.
	notify chan error
	// producer is set for a TxnOffsetCommit: its records go in a
	// transactional batch of that producer, alone.
	producer *batch.Producer
	// queued is when the driver queued the write; the commit timeout
	// counts from it.
	queued time.Time
}

// effects collect what a state machine step wants done outside the lock:
// answers to waiting requests, and appends.
type effects struct {
	joins  []joinReply
	syncs  []syncReply
	writes []write
}

type joinReply struct {
	ch  chan<- joinResult
	res joinResult
}

type syncReply struct {
	ch  chan<- syncResult
	res syncResult
}

func (e *effects) join(ch chan<- joinResult, r joinResult) {
	if ch != nil {
		e.joins = append(e.joins, joinReply{ch, r})
	}
}

func (e *effects) sync(ch chan<- syncResult, r syncResult) {
	if ch != nil {
		e.syncs = append(e.syncs, syncReply{ch, r})
	}
}

// deliver answers waiters. Each waiter channel has room for its one answer,
// so this never blocks.
func (e *effects) deliver() {
	for _, j := range e.joins {
		j.ch <- j.res
	}
	for _, s := range e.syncs {
		s.ch <- s.res
	}
	e.joins, e.syncs = nil, nil
}

// groupMetadataRecord builds the group's metadata record as Kafka writes it
// (key v2, value v3), with the given assignment per member.
func groupMetadataRecord(g *group, assignment map[string][]byte) record {
	key := kmsg.NewGroupMetadataKey()
	key.Version = 2
	key.Group = g.id
	val := kmsg.NewGroupMetadataValue()
	val.Version = 3
	val.ProtocolType = g.protocolType
	val.Generation = g.generation
	if g.protocolName != "" {
		p := g.protocolName
		val.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		val.Leader = &l
	}
	val.CurrentStateTimestamp = g.stateTimestamp.UnixMilli()
	for _, id := range g.memberOrder {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		if m.instanceID != "" {
			inst := m.instanceID
			vm.InstanceID = &inst
		}
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription = m.metadataFor(g.protocolName)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = assignment[m.id]
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		val.Members = append(val.Members, vm)
	}
	return record{key: key.AppendTo(nil), value: val.AppendTo(nil)}
}

func groupTombstone(groupID string) record {
	key := kmsg.NewGroupMetadataKey()
	key.Version = 2
	key.Group = groupID
	return record{key: key.AppendTo(nil)}
}

// offsetRecord builds an offset commit record as Kafka 3.x/4.x writes it:
// key v1, value v3, or value v1 when the commit carries an expire timestamp.
func offsetRecord(groupID string, tp topicPartition, o offsetEntry) record {
	key := kmsg.NewOffsetCommitKey()
	key.Version = 1
	key.Group = groupID
	key.Topic = tp.topic
	key.Partition = tp.partition
	val := kmsg.NewOffsetCommitValue()
	val.Version = 3
	if o.expireTimestamp >= 0 {
		val.Version = 1
		val.ExpireTimestamp = o.expireTimestamp
	}
	val.Offset = o.offset
	val.LeaderEpoch = o.leaderEpoch
	val.Metadata = o.metadata
	val.CommitTimestamp = o.commitTimestamp
	return record{key: key.AppendTo(nil), value: val.AppendTo(nil)}
}

func offsetTombstone(groupID string, tp topicPartition) record {
	key := kmsg.NewOffsetCommitKey()
	key.Version = 1
	key.Group = groupID
	key.Topic = tp.topic
	key.Partition = tp.partition
	return record{key: key.AppendTo(nil)}
}
