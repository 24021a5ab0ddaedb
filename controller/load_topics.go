package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/internal/parallel"
)

// stateReadParallelism bounds the znode reads (topic assignments, partition
// states, topic configs) a loading controller has in flight at once. A new
// controller reads every partition's state: one round trip after the other
// made its failover of 10,000 partitions wait on 10,000 round trips, and 32
// at a time within one topic, topic after topic, still left ZooKeeper idle
// between rounds. ZooKeeper pipelines a session's requests; Kafka's
// controller reads them asynchronously too.
const stateReadParallelism = 128

// readParallelism is stateReadParallelism, or 1 for a stepped controller,
// whose Env owns the only goroutine that may call the store.
func (c *Controller) readParallelism() int {
	return c.storeParallelism(stateReadParallelism)
}

// storeParallelism is n, or 1 for a stepped controller: how many store
// calls may run at once.
func (c *Controller) storeParallelism(n int) int {
	if c.env != nil {
		return 1
	}
	return n
}

// topicRead is what loading a topic reads from the store, before any of it
// is applied to the state.
type topicRead struct {
	name      string
	absent    bool // the topic znode is gone
	data      []byte
	stat      store.Stat
	watch     <-chan store.Event
	a         TopicAssignment
	decodeErr error
	toRead    []int32
	states    []stateRead
	// seeded are the states taken from the metadata cache (seed.go).
	seeded map[int32]PartitionState
	cfg    map[string]string
}

type stateRead struct {
	data []byte
	stat store.Stat
	err  error
}

// loadTopics reads the named topics (assignments, with their data
// watches, partition states and configs) all at once, and then applies
// them to the state in order; it returns the partitions new to the state.
func (c *Controller) loadTopics(ctx context.Context, names []string) ([]TP, error) {
	reads := make([]*topicRead, len(names))
	errs := make([]error, len(names))
	// Assignments first (they say which states to read), then every state
	// of every topic through one pool.
	workers := c.readParallelism()
	parallel.ForEach(len(names), workers, func(i int) {
		reads[i], errs[i] = c.readAssignment(ctx, names[i])
	})
	type job struct{ t, i int }
	var jobs []job
	for t, r := range reads {
		if errs[t] != nil || r.absent || r.decodeErr != nil {
			continue
		}
		r.states = make([]stateRead, len(r.toRead))
		for i := range r.toRead {
			jobs = append(jobs, job{t, i})
		}
	}
	parallel.ForEach(len(jobs), workers, func(k int) {
		r := reads[jobs[k].t]
		s := &r.states[jobs[k].i]
		s.data, s.stat, s.err = c.st.Get(ctx, PartitionStatePath(r.name, r.toRead[jobs[k].i]))
	})
	parallel.ForEach(len(names), workers, func(i int) {
		if r := reads[i]; errs[i] == nil && !r.absent && r.decodeErr == nil {
			r.cfg, errs[i] = TopicConfigs(ctx, c.st, r.name)
		}
	})
	var added []TP
	for i, r := range reads {
		if errs[i] != nil {
			return nil, errs[i]
		}
		tps, err := c.applyTopic(ctx, r)
		if err != nil {
			return nil, err
		}
		added = append(added, tps...)
	}
	return added, nil
}

// loadTopic loads one topic (loadTopics).
func (c *Controller) loadTopic(ctx context.Context, name string) ([]TP, error) {
	return c.loadTopics(ctx, []string{name})
}

// readAssignment reads a topic's assignment, arming its data watch, and
// names the partitions whose states the state does not hold yet. It only
// reads c.state: loadTopics runs it on several goroutines.
func (c *Controller) readAssignment(ctx context.Context, name string) (*topicRead, error) {
	r := &topicRead{name: name}
	var err error
	r.data, r.stat, r.watch, err = c.st.GetW(ctx, TopicPath(name))
	if errors.Is(err, store.ErrNoNode) {
		r.absent = true
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read topic %s: %w", name, err)
	}
	if r.a, r.decodeErr = decodeTopic(name, r.data); r.decodeErr != nil {
		return r, nil
	}
	var known map[int32]PartitionState
	if t := c.state.Topics[name]; t != nil && t.ID == r.a.TopicID && r.a.TopicID != ([16]byte{}) {
		known = t.States
	}
	r.seeded = c.seedFrom(r)
	for p := range r.a.Partitions {
		if _, ok := known[p]; ok {
			continue
		}
		if _, ok := r.seeded[p]; !ok {
			r.toRead = append(r.toRead, p)
		}
	}
	slices.Sort(r.toRead)
	return r, nil
}

// applyTopic puts what readAssignment and loadTopics read into the state.
func (c *Controller) applyTopic(ctx context.Context, r *topicRead) ([]TP, error) {
	if r.absent {
		return nil, nil
	}
	name := r.name
	c.forward(ctx, r.watch, func(p *pendingEvents) {
		if p.topicData == nil {
			p.topicData = map[string]bool{}
		}
		p.topicData[name] = true
	})
	// A topic whose znodes cannot be decoded is left out (and logged) rather
	// than failing the controller: failing would only repeat on re-election.
	// Its watch stays armed, so a repaired znode is picked up.
	if r.decodeErr != nil {
		c.log.Error("ignoring topic with unreadable assignment", "topic", name, "err", r.decodeErr)
		return nil, nil
	}
	a := r.a
	if a.TopicID == ([16]byte{}) {
		var err error
		if a, err = c.assignTopicID(ctx, a, r.stat.Version); err != nil {
			return nil, err
		}
	}
	states := map[int32]PartitionState{}
	for i, p := range r.toRead {
		s := r.states[i]
		if errors.Is(s.err, store.ErrNoNode) {
			continue
		}
		if s.err != nil {
			return nil, fmt.Errorf("read state of %s-%d: %w", name, p, s.err)
		}
		ps, err := decodePartitionState(s.data, s.stat)
		if err != nil {
			c.log.Error("ignoring topic with unreadable partition state", "topic", name, "partition", p, "err", err)
			return nil, nil
		}
		states[p] = ps
	}
	for _, p := range slices.Sorted(maps.Keys(r.seeded)) {
		states[p] = r.seeded[p]
		c.seeded = append(c.seeded, TP{name, p})
	}
	added := c.state.OnAssignmentChange(name, a)
	t := c.state.Topics[name]
	for p, ps := range states {
		t.States[p] = ps
	}
	t.UncleanOverride = uncleanSetting(r.cfg)
	return added, nil
}
