package group

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// ErrCorrupt marks a __consumer_offsets record this package cannot decode.
var ErrCorrupt = errors.New("group: corrupt offsets topic record")

// buildBatch makes one uncompressed v2 batch of the records, stamped with
// now, as the coordinator appends it; with a producer (TxnOffsetCommit) the
// batch is transactional, as Kafka writes it.
func buildBatch(recs []record, now time.Time, codecs *batch.Codecs, producer *batch.Producer) ([]byte, error) {
	brs := make([]batch.Record, len(recs))
	for i, r := range recs {
		brs[i] = batch.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
	}
	b, err := batch.Build(batch.BuildOptions{
		PartitionLeaderEpoch: batch.NoPartitionLeader,
		Compression:          batch.None,
		BaseTimestamp:        now.UnixMilli(),
		Transactional:        producer != nil,
		Producer:             producer,
	}, brs, codecs)
	if err != nil {
		return nil, fmt.Errorf("build offsets batch of %d records: %w", len(recs), err)
	}
	return b, nil
}

// loadedGroup accumulates the last value of each key of one group while a
// partition is replayed.
type loadedGroup struct {
	metadata *kmsg.GroupMetadataValue // nil: none or deleted
	offsets  map[topicPartition]offsetEntry
}

// loader replays __consumer_offsets records; later records win, and
// tombstones remove.
type loader struct {
	groups map[string]*loadedGroup
	// txn holds, per producer id, the offsets of transactional batches
	// whose marker has not been read yet (txn_offsets.go).
	txn map[int64]*loader
	// batchOffset is the base offset of the batch being replayed, which
	// its offsets remember (offsetEntry.appendOffset).
	batchOffset int64
}

func newLoader() *loader { return &loader{groups: map[string]*loadedGroup{}} }

func (l *loader) group(id string) *loadedGroup {
	lg := l.groups[id]
	if lg == nil {
		lg = &loadedGroup{offsets: map[topicPartition]offsetEntry{}}
		l.groups[id] = lg
	}
	return lg
}

// apply replays one record. Key versions 0 and 1 are offset commits, 2 is
// group metadata; other versions (newer coordinators' record types) are
// skipped and reported as false.
func (l *loader) apply(key, value []byte) (bool, error) {
	if len(key) < 2 {
		return false, fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(key))
	}
	// Decoded structs may alias their input, and batches are reused.
	key, value = bytes.Clone(key), bytes.Clone(value)
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return false, fmt.Errorf("%w: offset commit key: %v", ErrCorrupt, err)
		}
		lg := l.group(k.Group)
		tp := topicPartition{k.Topic, k.Partition}
		if value == nil {
			delete(lg.offsets, tp)
			// A plain tombstone (the group's offsets deleted or expired)
			// drops the partition's pending transactional offsets, as the
			// live coordinator did; l.txn is nil in a producer's loader.
			for _, pending := range l.txn {
				if plg := pending.groups[k.Group]; plg != nil {
					delete(plg.offsets, tp)
				}
			}
			return true, nil
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(value); err != nil {
			return false, fmt.Errorf("%w: offset commit value of %s: %v", ErrCorrupt, k.Group, err)
		}
		e := offsetEntry{offset: val.Offset, leaderEpoch: -1, metadata: val.Metadata, commitTimestamp: val.CommitTimestamp, expireTimestamp: -1, appendOffset: l.batchOffset}
		if val.Version >= 3 {
			e.leaderEpoch = val.LeaderEpoch
		}
		if val.Version == 1 {
			e.expireTimestamp = val.ExpireTimestamp
		}
		lg.offsets[tp] = e
		return true, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return false, fmt.Errorf("%w: group metadata key: %v", ErrCorrupt, err)
		}
		lg := l.group(k.Group)
		if value == nil {
			lg.metadata = nil
			// The group was deleted: its pending transactional offsets
			// went with it.
			for _, pending := range l.txn {
				delete(pending.groups, k.Group)
			}
			return true, nil
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(value); err != nil {
			return false, fmt.Errorf("%w: group metadata value of %s: %v", ErrCorrupt, k.Group, err)
		}
		lg.metadata = &val
		return true, nil
	}
	return false, nil
}

// applyBatches replays whole batches as Partition.Read returns them and
// reports the offset after the last complete batch and how many it read.
func (l *loader) applyBatches(data []byte, codecs *batch.Codecs) (next int64, n int, err error) {
	next, n, err = batch.EachBatch(data, func(h *batch.Header, b []byte) error { return l.applyBatch(h, b, codecs) })
	if err != nil {
		err = fmt.Errorf("offsets: %w", err)
	}
	return next, n, err
}

func (l *loader) applyRecords(b []byte, codecs *batch.Codecs) error {
	return batch.EachKeyedRecord(b, codecs, func(key, value []byte) error {
		_, err := l.apply(key, value)
		return err
	})
}

// build turns the replayed records into groups: Stable when the last
// metadata had members (they must heartbeat within their session timeout),
// Empty otherwise; offsets without metadata belong to an Empty group.
func (l *loader) build(now time.Time) map[string]*group {
	out := make(map[string]*group, len(l.groups))
	for id, lg := range l.groups {
		if lg.metadata == nil && len(lg.offsets) == 0 {
			continue
		}
		g := newGroup(id, now)
		if md := lg.metadata; md != nil {
			g.protocolType = md.ProtocolType
			g.generation = md.Generation
			if md.Protocol != nil {
				g.protocolName = *md.Protocol
			}
			g.stateTimestamp = time.Time{}
			if md.Version >= 2 && md.CurrentStateTimestamp >= 0 {
				g.stateTimestamp = time.UnixMilli(md.CurrentStateTimestamp)
			}
			var members []*member
			ids, instances := map[string]bool{}, map[string]bool{}
			for _, vm := range md.Members {
				// A generation always has a protocol; ids are unique.
				// Records breaking that come from a broken writer and
				// would corrupt the bookkeeping, so such members are
				// dropped and must rejoin.
				if g.protocolName == "" || ids[vm.MemberID] || (vm.InstanceID != nil && instances[*vm.InstanceID]) {
					continue
				}
				ids[vm.MemberID] = true
				m := &member{
					id:               vm.MemberID,
					clientID:         vm.ClientID,
					clientHost:       vm.ClientHost,
					sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
					rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
					protocolType:     md.ProtocolType,
					protocols:        []protocol{{name: g.protocolName, metadata: vm.Subscription}},
					assignment:       vm.Assignment,
				}
				if md.Version == 0 {
					m.rebalanceTimeout = m.sessionTimeout
				}
				if vm.InstanceID != nil {
					m.instanceID = *vm.InstanceID
					instances[m.instanceID] = true
				}
				members = append(members, m)
			}
			// A generation with members always has one of them as its
			// leader; without one the whole membership is suspect, and
			// the members rejoin.
			if md.Leader != nil && ids[*md.Leader] {
				for _, m := range members {
					g.add(m)
				}
				g.leader = *md.Leader
			}
			if len(g.members) > 0 {
				g.state = StateStable
			}
		}
		g.offsets = lg.offsets
		g.subscribedTopics = g.computeSubscribedTopics()
		out[id] = g
	}
	return out
}
