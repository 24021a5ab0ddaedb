package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/brook-mq/brook/log"
)

// Errors the broker maps to Kafka codes.
var (
	ErrNotLeader         = errors.New("replica: not the leader")
	ErrNotEnoughReplicas = errors.New("replica: ISR smaller than min.insync.replicas")
	// ErrNotEnoughReplicasAfterAppend: the records are committed, but the
	// ISR shrank below min.insync.replicas while acks=all waited.
	ErrNotEnoughReplicasAfterAppend = errors.New("replica: ISR shrank below min.insync.replicas after the append")
	ErrFencedEpoch                  = errors.New("replica: fenced leader epoch")
	ErrUnknownEpoch                 = errors.New("replica: unknown leader epoch")
	// ErrUnknownReplica: a fetch names a replica id the partition does not have.
	ErrUnknownReplica = errors.New("replica: not an assigned replica")
	// ErrStaleBrokerEpoch: a follower's fetch carries a broker epoch below
	// one an earlier fetch carried (an earlier incarnation's fetch).
	ErrStaleBrokerEpoch = errors.New("replica: stale broker epoch")
)

// StaleBrokerEpochError is UpdateFollowerFetch's refusal of a fetch whose
// broker epoch is below the follower's recorded one; it is an
// ErrStaleBrokerEpoch.
type StaleBrokerEpochError struct {
	ReplicaID      int32
	TopicPartition log.TopicPartition
	// BrokerEpoch is the fetch's, Recorded the one the leader holds.
	BrokerEpoch, Recorded int64
	// First is set on the first refusal of BrokerEpoch since the leader
	// last changed what it holds of the follower: a follower whose epoch
	// went down fetches again every replica.fetch.backoff.ms, and only
	// the first refusal is worth a warning.
	First bool
}

func (e *StaleBrokerEpochError) Error() string {
	return fmt.Sprintf("%v: %d fetching %s at broker epoch %d, %d seen", ErrStaleBrokerEpoch, e.ReplicaID, e.TopicPartition, e.BrokerEpoch, e.Recorded)
}

func (e *StaleBrokerEpochError) Unwrap() error { return ErrStaleBrokerEpoch }

// Partition is one partition hosted on this broker.
type Partition struct {
	tp      log.TopicPartition
	topicID [16]byte
	localID int32
	log     *log.Log
	// now and lagMax judge followers' ISR membership (replica.lag.time.max.ms).
	now    func() time.Time
	lagMax time.Duration
	// isrChanged is told, without blocking, that an ISR change awaits sending.
	isrChanged func()
	// isrStats counts accepted ISR changes (the manager's; nil in tests
	// that build a Partition alone).
	isrStats *isrStats
	// faults are the test-only reverted fixes (Config.Faults).
	faults Faults
	// brokerEpoch gives this broker's epoch, -1 when unknown
	// (Manager.brokerEpoch).
	brokerEpoch func() int64

	// roleMu is held for reading across a leader append (check and write)
	// and for writing by role changes (become), as Kafka's
	// leaderIsrUpdateLock: once a partition follows, no append of its
	// former term can still land in the log the fetcher now writes.
	// Order: roleMu -> mu.
	roleMu sync.RWMutex

	mu sync.Mutex
	// leader, leaderEpoch, replicas, isr and zkVersion (the partition epoch)
	// are the controller's decision, from LeaderAndISR or an accepted
	// AlterPartition; only a newer decision replaces them.
	leader      int32
	leaderEpoch int32
	zkVersion   int32
	replicas    []int32
	isr         []int32
	// leaderTerm is the leader epoch at which this broker last became
	// leader; an acks=all wait is only valid within the term of its append.
	leaderTerm int32
	// leaderEpochStartOffset is the LEO when this leadership began.
	leaderEpochStartOffset int64
	// followers is the leader's view of each other replica (leader only).
	followers map[int32]*followerState
	// proposedISR is an ISR change not yet accepted by the controller (nil
	// when none); alter says where it stands (alter.go). Only the
	// controller's answer or decision ends it.
	proposedISR []int32
	alter       alterState
	// proposedEpochs are the broker epochs of proposedISR's members when
	// it was proposed (-1: unknown), sent with it every time (KIP-903).
	proposedEpochs []int64
	// watchers are woken, without blocking, when the HW advances or the
	// role changes; appendWatchers (follower fetches) also on every append.
	watchers       map[chan<- struct{}]struct{}
	appendWatchers map[chan<- struct{}]struct{}
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() log.TopicPartition { return p.tp }

// TopicID is the topic's ID.
func (p *Partition) TopicID() [16]byte { return p.topicID }

// Log is the partition's local log.
func (p *Partition) Log() *log.Log { return p.log }

// State is a snapshot of the partition's replication state.
type State struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	// ZKVersion is the partition epoch (the state znode's version).
	ZKVersion int32
}

// State returns the current leader, epoch, replicas and ISR.
func (p *Partition) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return State{p.leader, p.leaderEpoch, slices.Clone(p.replicas), slices.Clone(p.isr), p.zkVersion}
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader == p.localID
}

// CheckLeaderEpoch compares a client's current_leader_epoch with ours, as
// Fetch v9+ and ListOffsets v4+ ask: -1 skips the check.
func (p *Partition) CheckLeaderEpoch(epoch int32) error {
	if epoch < 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case epoch < p.leaderEpoch:
		return ErrFencedEpoch
	case epoch > p.leaderEpoch:
		return ErrUnknownEpoch
	}
	return nil
}

// AppendAsLeader appends one producer batch. With acks=all it first checks
// the ISR against minISR, as Kafka does before appending; waiting for the
// HW is the caller's, through WaitForHighWatermark or WaitForCommit.
func (p *Partition) AppendAsLeader(b []byte, requiredAcks int16, minISR int) (log.AppendInfo, error) {
	info, _, err := p.AppendAsLeaderInTerm(b, requiredAcks, minISR)
	return info, err
}

// AppendAsLeaderInTerm is AppendAsLeader that also returns the leadership
// term (the epoch at which this broker became leader) for WaitForCommit.
func (p *Partition) AppendAsLeaderInTerm(b []byte, requiredAcks int16, minISR int) (log.AppendInfo, int32, error) {
	return p.appendAsLeader(requiredAcks, minISR, func(epoch int32) (log.AppendInfo, error) { return p.log.Append(b, epoch) })
}

// AppendAsCoordinatorInTerm is AppendAsLeaderInTerm for batches a
// coordinator writes on a producer's behalf (log.AppendAsCoordinator).
func (p *Partition) AppendAsCoordinatorInTerm(b []byte, requiredAcks int16, minISR int) (log.AppendInfo, int32, error) {
	return p.appendAsLeader(requiredAcks, minISR, func(epoch int32) (log.AppendInfo, error) { return p.log.AppendAsCoordinator(b, epoch) })
}

// appendAsLeader runs one append of the leader (append gets the leader
// epoch to stamp) between the leadership and ISR checks and the wake-ups
// and HW update that follow every leader append, holding the role lock
// from the check to the write.
func (p *Partition) appendAsLeader(requiredAcks int16, minISR int, append func(epoch int32) (log.AppendInfo, error)) (log.AppendInfo, int32, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.mu.Lock()
	if p.leader != p.localID {
		p.mu.Unlock()
		return log.AppendInfo{}, -1, ErrNotLeader
	}
	if requiredAcks == -1 && len(p.isr) < minISR {
		isr := slices.Clone(p.isr)
		p.mu.Unlock()
		return log.AppendInfo{}, -1, fmt.Errorf("%w: ISR %v, min %d", ErrNotEnoughReplicas, isr, minISR)
	}
	epoch, term := p.leaderEpoch, p.leaderTerm
	p.mu.Unlock()

	info, err := append(epoch)
	if err != nil {
		return info, term, err
	}
	p.mu.Lock()
	// Followers long-poll for new records, not for the HW.
	wake(p.appendWatchers)
	p.maybeAdvanceHighWatermarkLocked()
	p.mu.Unlock()
	return info, term, nil
}

// maybeAdvanceHighWatermark recomputes the HW and wakes watchers if it moved.
func (p *Partition) maybeAdvanceHighWatermark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maybeAdvanceHighWatermarkLocked()
}

// maybeAdvanceHighWatermarkLocked is maybeAdvanceHighWatermark under
// p.mu; it reports whether it set a new HW.
func (p *Partition) maybeAdvanceHighWatermarkLocked() bool {
	if p.leader != p.localID {
		return false
	}
	current := p.log.HighWatermark()
	isr := maximalISR(p.isr, p.proposedISR)
	hw := highWatermark(current, p.log.LogEndOffset(), p.localID, isr, knownLEOs(p.followers))
	if hw == current {
		return false
	}
	p.log.SetHighWatermark(hw)
	p.wakeLocked()
	return true
}

func (p *Partition) wakeLocked() {
	wake(p.watchers)
	wake(p.appendWatchers)
}

func wake(watchers map[chan<- struct{}]struct{}) {
	for ch := range watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// LastStableOffset bounds read_committed reads: the high watermark, or
// the first offset of the oldest transaction not yet decided and
// replicated when that is lower.
func (p *Partition) LastStableOffset() int64 { return p.log.LastStableOffset() }

// Watch registers ch to be signalled (non-blocking) when the HW advances
// or the role changes. The returned func unregisters it.
func (p *Partition) Watch(ch chan<- struct{}) (cancel func()) {
	return p.watch(&p.watchers, ch)
}

// WatchAppends is Watch that also signals every append as leader: a
// follower's fetch waits for new records, not for the HW.
func (p *Partition) WatchAppends(ch chan<- struct{}) (cancel func()) {
	return p.watch(&p.appendWatchers, ch)
}

// Watchers is how many waits (long-poll fetches of consumers and
// followers) watch the partition now.
func (p *Partition) Watchers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.watchers) + len(p.appendWatchers)
}

// AddWatch registers ch as Watch does, or WatchAppends when appends is
// set, without a cancel func: RemoveWatch with the same ch and appends
// unregisters it. A fetch watching thousands of partitions with one
// channel keeps no func per partition.
func (p *Partition) AddWatch(ch chan<- struct{}, appends bool) {
	p.addWatch(p.watchSet(appends), ch)
}

// RemoveWatch unregisters ch, as the cancel func of Watch (appends
// false) or WatchAppends (appends true) does.
func (p *Partition) RemoveWatch(ch chan<- struct{}, appends bool) {
	p.removeWatch(p.watchSet(appends), ch)
}

func (p *Partition) watchSet(appends bool) *map[chan<- struct{}]struct{} {
	if appends {
		return &p.appendWatchers
	}
	return &p.watchers
}

func (p *Partition) watch(set *map[chan<- struct{}]struct{}, ch chan<- struct{}) (cancel func()) {
	p.addWatch(set, ch)
	return func() { p.removeWatch(set, ch) }
}

func (p *Partition) addWatch(set *map[chan<- struct{}]struct{}, ch chan<- struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *set == nil {
		*set = make(map[chan<- struct{}]struct{})
	}
	(*set)[ch] = struct{}{}
}

func (p *Partition) removeWatch(set *map[chan<- struct{}]struct{}, ch chan<- struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(*set, ch)
}

// WaitForHighWatermark blocks until the HW reaches offset (exclusive: the
// records below offset are committed), the leader changes, or ctx ends.
func (p *Partition) WaitForHighWatermark(ctx context.Context, offset int64) error {
	p.mu.Lock()
	term := p.leaderTerm
	p.mu.Unlock()
	return p.WaitForCommit(ctx, offset, term, 0)
}

// WaitForCommit is acks=all's wait, as Kafka's delayed produce: it ends
// when the HW reaches offset (ErrNotEnoughReplicasAfterAppend if the ISR
// is then below minISR), when this broker stops leading or its leadership
// term is no longer term (ErrNotLeader: the records may be truncated), or
// with ctx.
func (p *Partition) WaitForCommit(ctx context.Context, offset int64, term int32, minISR int) error {
	ch := make(chan struct{}, 1)
	cancel := p.Watch(ch)
	defer cancel()
	for {
		// The HW is read under the same lock as the term: read after it,
		// it could be a later leader's HW (or a follower's) covering other
		// records at the same offsets.
		p.mu.Lock()
		leading := p.leader == p.localID && p.leaderTerm == term
		isrSize := len(p.isr)
		hw := p.log.HighWatermark()
		p.mu.Unlock()
		if !leading {
			return ErrNotLeader
		}
		if hw >= offset {
			if isrSize < minISR {
				return fmt.Errorf("%w: ISR of %d, min %d", ErrNotEnoughReplicasAfterAppend, isrSize, minISR)
			}
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// accepts reports whether become would apply s.
func (p *Partition) accepts(s State) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !(s.LeaderEpoch < p.leaderEpoch || (s.LeaderEpoch == p.leaderEpoch && s.ZKVersion < p.zkVersion))
}

// become applies a LeaderAndISR decision unless it is older than ours: a
// lower leader epoch, or the same epoch with a lower partition epoch. It
// reports whether this broker's leadership changed and whether it applied;
// err is a failure to record a new leader epoch's start in the log, or to
// drop a former leader's empty one.
func (p *Partition) become(s State) (changed bool, applied bool, err error) {
	// Wait for leader appends in flight; later ones see the new role.
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.LeaderEpoch < p.leaderEpoch || (s.LeaderEpoch == p.leaderEpoch && s.ZKVersion < p.zkVersion) {
		return false, false, nil
	}
	wasLeader, oldEpoch := p.leader == p.localID, p.leaderEpoch
	p.leader, p.leaderEpoch, p.zkVersion = s.Leader, s.LeaderEpoch, s.ZKVersion
	p.replicas, p.isr = slices.Clone(s.Replicas), slices.Clone(s.ISR)
	// The controller's word replaces any ISR change we proposed.
	p.proposedISR, p.alter = nil, alterUnsent
	isLeader := p.leader == p.localID
	switch {
	case isLeader && !wasLeader:
		p.leaderTerm = s.LeaderEpoch
		p.leaderEpochStartOffset = p.log.LogEndOffset()
		if !p.faults.NoEpochStartAtElection {
			err = p.log.AssignEpochStartOffset(s.LeaderEpoch, p.leaderEpochStartOffset)
		}
		now := p.now()
		p.followers = map[int32]*followerState{}
		for _, id := range p.replicas {
			if id != p.localID {
				p.followers[id] = newFollowerState(slices.Contains(p.isr, id), now)
			}
		}
	case isLeader:
		// Same leader, new decision (e.g. a replica reassigned): keep what
		// we know of followers, track new ones.
		if s.LeaderEpoch > oldEpoch {
			p.leaderEpochStartOffset = p.log.LogEndOffset()
			if !p.faults.NoEpochStartAtElection {
				err = p.log.AssignEpochStartOffset(s.LeaderEpoch, p.leaderEpochStartOffset)
			}
		}
		now := p.now()
		for _, id := range p.replicas {
			if _, ok := p.followers[id]; !ok && id != p.localID {
				p.followers[id] = newFollowerState(slices.Contains(p.isr, id), now)
			}
		}
		// A follower outside the ISR is let back in by any broker epoch:
		// one that went down (a ZooKeeper ensemble rebuilt, its czxids
		// started again lower) would otherwise be refused for as long as
		// this broker leads. The controller still refuses an ISR change
		// naming an epoch other than the follower's live registration, so
		// an earlier incarnation's fetch cannot bring it back in.
		for id, f := range p.followers {
			if !slices.Contains(p.isr, id) {
				f.brokerEpoch, f.refusedBrokerEpoch = -1, 0
			}
		}
	case wasLeader:
		p.followers = nil
		// The epoch start this broker recorded at its election is the
		// log end if it wrote nothing since; as a follower that epoch,
		// newer than the new leader's last, must go before the first
		// fetched batch (log.TruncateTo). Kafka drops it at the follower's
		// first truncation, which always calls truncateTo; the follower
		// steps here truncate only when they cut something.
		if terr := p.log.TruncateTo(p.log.LogEndOffset()); terr != nil && err == nil {
			err = terr
		}
	default:
		p.followers = nil
	}
	// Wake waiters: a leader change ends acks=all waits and long polls.
	p.wakeLocked()
	return wasLeader != isLeader, true, err
}
