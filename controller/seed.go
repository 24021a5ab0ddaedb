package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/internal/parallel"
)

// A new controller starts from the partition states its broker's metadata
// cache holds (Config.CachedStates) instead of reading every state znode.
// At 50,000 partitions those reads were 3.7-5 s of a 5 s failover: one
// getData per partition, which Kafka's controller makes too.
//
// A cached state is one the last controller wrote and then sent in
// UpdateMetadata, with its znode version: execute sends nothing for a
// write that failed, so a (version, content) pair in the cache is one the
// znode really had. It may be out of date. Three things keep that safe:
//
//   - Every partition state write is conditional on the version the
//     controller holds, so a write based on a stale state fails
//     (ErrBadVersion) instead of overwriting; the term then reads every
//     state (unseeded) and starts again (StartTerm).
//   - A seeded state the failover wrote is confirmed by that write: the
//     znode was at the cached version, so it held the cached content.
//     Every other seeded state is read back in the background once the
//     term has started (startSeedCheck). A znode newer than what the
//     controller holds, or gone while its topic stays, makes the
//     controller reload the whole state from the store (resync), as after
//     any inconsistency. A failover of the controller's own broker writes
//     every partition it held a replica of (its ISR shrinks), so at RF 3
//     on 3 brokers nothing is left to read back.
//   - What the cache cannot say is not guessed: a state is read, not
//     seeded, when an ISR member may have restarted since the state was
//     written (OnElected's bounce check needs the znode's mzxid, which the
//     cache lacks), or when its ISR is a single broker (UpdateMetadata
//     does not carry the leader recovery state an unclean election sets).
//
// A stepped controller (the simulation) reads them back in its next Step
// instead, one at a time: its Env owns the only goroutine that may call
// the store.

// seedCheck is the read-back of the seeded states.
type seedCheck struct {
	tps    []TP
	states []stateRead
	// read: states holds the reads (a stepped controller's are made by
	// onSeedCheck).
	read bool
}

// seedFrom returns the states of a topic the cache may stand in for, or
// nil: the cache's topic must be the znode's (same id) and each state must
// pass seedable. It only reads c's state: readAssignment runs it on
// several goroutines.
func (c *Controller) seedFrom(r *topicRead) map[int32]PartitionState {
	if !c.seeding || r.a.TopicID == ([16]byte{}) {
		return nil
	}
	cached := c.cfg.CachedStates(r.name, r.a.TopicID)
	if len(cached) == 0 {
		return nil
	}
	out := map[int32]PartitionState{}
	for p := range r.a.Partitions {
		if st, ok := cached[p]; ok && c.seedable(st, r.stat.Czxid) {
			out[p] = st
		}
	}
	return out
}

// seedable says whether a cached state of a topic whose znode was created
// at topicCzxid can stand in for its znode. OnElected removes from the
// ISR (and from leadership) a broker registered after the state was
// written: an unseen restart. The state's mzxid is unknown here, but it
// is at least the topic's czxid (states are created after their topic)
// and, for a state written in the previous controller's term, that
// term's election zxid. A live ISR member registered after both bounds
// might have restarted since the write, so that state is read.
func (c *Controller) seedable(st PartitionState, topicCzxid int64) bool {
	if len(st.ISR) < 2 || st.Leader < 0 || !slices.Contains(st.ISR, st.Leader) {
		return false
	}
	bound := topicCzxid
	if st.ControllerEpoch == c.prevEpoch && c.prevEpochZxid > bound {
		bound = c.prevEpochZxid
	}
	for _, r := range st.ISR {
		if b, ok := c.state.Live[r]; ok && b.Epoch > bound {
			return false
		}
	}
	return true
}

// unwritten returns the seeded partitions that writes (done, each
// conditional on the version seeded) did not confirm.
func unwritten(seeded []TP, writes []StateWrite) []TP {
	if len(writes) == 0 {
		return seeded
	}
	written := make(map[TP]bool, len(writes))
	for _, w := range writes {
		written[w.TP] = true
	}
	var out []TP
	for _, tp := range seeded {
		if !written[tp] {
			out = append(out, tp)
		}
	}
	return out
}

// startSeedCheck reads the seeded states back on a goroutine that ends
// with ctx (the term's), and hands them to the loop; a stepped
// controller's next Step reads them.
func (c *Controller) startSeedCheck(ctx context.Context, tps []TP) {
	chk := &seedCheck{tps: tps, states: make([]stateRead, len(tps))}
	c.seedPending = chk
	if c.env != nil {
		c.post(func(p *pendingEvents) { p.seedChecked = chk })
		return
	}
	go func() {
		chk.readStates(ctx, c.st, stateReadParallelism)
		if ctx.Err() != nil {
			return
		}
		c.post(func(p *pendingEvents) { p.seedChecked = chk })
	}()
}

// readStates reads every state of the check, workers at a time.
func (chk *seedCheck) readStates(ctx context.Context, st Store, workers int) {
	parallel.ForEach(len(chk.tps), workers, func(i int) {
		if ctx.Err() != nil {
			return
		}
		s, tp := &chk.states[i], chk.tps[i]
		s.data, s.stat, s.err = st.Get(ctx, PartitionStatePath(tp.Topic, tp.Partition))
	})
	chk.read = true
}

// onSeedCheck compares the states read back with those held. A znode
// newer than the state held, or gone while its topic stays, means the
// cache was out of date: the controller reloads everything from the store.
// A version older than the one held is the controller's own later write.
func (c *Controller) onSeedCheck(ctx context.Context, chk *seedCheck) error {
	if chk != c.seedPending {
		return nil // a resync since: the state was read whole
	}
	c.seedPending = nil
	if !chk.read {
		chk.readStates(ctx, c.st, c.readParallelism())
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	stale := 0
	var first string
	for i, tp := range chk.tps {
		t := c.state.Topics[tp.Topic]
		if t == nil || c.state.Deleting[tp.Topic] {
			continue
		}
		cur, held := t.States[tp.Partition]
		s := chk.states[i]
		newer := false
		switch {
		case errors.Is(s.err, store.ErrNoNode):
			newer = held
		case s.err != nil:
			return fmt.Errorf("read back the seeded state of %s: %w", tp, s.err)
		case !held || s.stat.Version > cur.ZkVersion:
			newer = true
		case s.stat.Version == cur.ZkVersion:
			cur.Mzxid = s.stat.Mzxid
			t.States[tp.Partition] = cur
		}
		if newer {
			if stale == 0 {
				first = tp.String()
			}
			stale++
		}
	}
	if stale == 0 {
		c.log.Info("cached partition states confirmed", "partitions", len(chk.tps))
		return nil
	}
	c.log.Warn("cached partition states were out of date; reloading the state", "stale", stale, "first", first)
	return c.resync(ctx)
}
