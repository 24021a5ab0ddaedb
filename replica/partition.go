package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/brook-mq/brook/log"
)

// Errors the broker maps to Kafka codes.
var (
	ErrNotLeader         = errors.New("replica: not the leader")
	ErrNotEnoughReplicas = errors.New("replica: ISR smaller than min.insync.replicas")
	ErrFencedEpoch       = errors.New("replica: fenced leader epoch")
	ErrUnknownEpoch      = errors.New("replica: unknown leader epoch")
)

// Partition is one partition hosted on this broker.
type Partition struct {
	tp      log.TopicPartition
	topicID [16]byte
	localID int32
	log     *log.Log

	mu sync.Mutex
	// leader, leaderEpoch, replicas and isr are the controller's decision,
	// applied from LeaderAndISR; only a newer leader epoch replaces them.
	leader      int32
	leaderEpoch int32
	replicas    []int32
	isr         []int32
	// followerLEO holds the log end offsets followers reported (empty
	// until replication exists).
	followerLEO map[int32]int64
	// watchers are woken, without blocking, whenever the HW advances.
	watchers map[chan<- struct{}]struct{}
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
}

// State returns the current leader, epoch, replicas and ISR.
func (p *Partition) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return State{p.leader, p.leaderEpoch, slices.Clone(p.replicas), slices.Clone(p.isr)}
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
// HW is the caller's, through WaitForHighWatermark.
func (p *Partition) AppendAsLeader(b []byte, requiredAcks int16, minISR int) (log.AppendInfo, error) {
	p.mu.Lock()
	if p.leader != p.localID {
		p.mu.Unlock()
		return log.AppendInfo{}, ErrNotLeader
	}
	if requiredAcks == -1 && len(p.isr) < minISR {
		p.mu.Unlock()
		return log.AppendInfo{}, fmt.Errorf("%w: ISR %v, min %d", ErrNotEnoughReplicas, p.isr, minISR)
	}
	epoch := p.leaderEpoch
	p.mu.Unlock()

	info, err := p.log.Append(b, epoch)
	if err != nil {
		return info, err
	}
	p.maybeAdvanceHighWatermark()
	return info, nil
}

// maybeAdvanceHighWatermark recomputes the HW and wakes watchers if it moved.
func (p *Partition) maybeAdvanceHighWatermark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != p.localID {
		return
	}
	current := p.log.HighWatermark()
	hw := highWatermark(current, p.log.LogEndOffset(), p.localID, p.isr, p.followerLEO)
	if hw == current {
		return
	}
	p.log.SetHighWatermark(hw)
	for ch := range p.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// LastStableOffset bounds read_committed reads. Without transactions it is
// the high watermark.
func (p *Partition) LastStableOffset() int64 { return p.log.HighWatermark() }

// Watch registers ch to be signalled (non-blocking) when the HW advances.
// The returned func unregisters it.
func (p *Partition) Watch(ch chan<- struct{}) (cancel func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watchers == nil {
		p.watchers = make(map[chan<- struct{}]struct{})
	}
	p.watchers[ch] = struct{}{}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.watchers, ch)
	}
}

// WaitForHighWatermark blocks until the HW reaches offset (exclusive: the
// records below offset are committed), the leader changes, or ctx ends.
func (p *Partition) WaitForHighWatermark(ctx context.Context, offset int64) error {
	ch := make(chan struct{}, 1)
	cancel := p.Watch(ch)
	defer cancel()
	for {
		if p.log.HighWatermark() >= offset {
			return nil
		}
		if !p.IsLeader() {
			return ErrNotLeader
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// become applies a LeaderAndISR decision if its epoch is not older than ours.
// It reports whether leadership of this broker changed.
func (p *Partition) become(s State) (changed bool, applied bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.LeaderEpoch < p.leaderEpoch {
		return false, false
	}
	wasLeader := p.leader == p.localID
	p.leader, p.leaderEpoch = s.Leader, s.LeaderEpoch
	p.replicas, p.isr = slices.Clone(s.Replicas), slices.Clone(s.ISR)
	isLeader := p.leader == p.localID
	if isLeader && !wasLeader {
		p.followerLEO = map[int32]int64{}
	}
	// Wake waiters: a leader change ends acks=all waits and long polls.
	for ch := range p.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return wasLeader != isLeader, true
}
