package workload

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// commitInterval paces each member: a poll and a commit at most this
	// often, a steady stream of commits through every fault that does not
	// swamp a shared 2-core machine with __consumer_offsets writes.
	commitInterval = 200 * time.Millisecond
	// offsetsPollInterval paces the OffsetFetch watcher.
	offsetsPollInterval = 500 * time.Millisecond
	// requestTimeout bounds one commit (three of them) or OffsetFetch
	// (two) while brokers fail.
	requestTimeout = 5 * time.Second
)

// CommitLog gathers every sighting of the group's committed offsets, by
// the members (acknowledged commits) and by the watcher (OffsetFetch).
type CommitLog struct {
	mu      sync.Mutex
	events  map[int32][]CommitEvent
	acked   int
	fetched int
	errs    map[string]int // error text -> count
	// lastAck is when the last commit was acknowledged.
	lastAck time.Time
}

func newCommitLog() *CommitLog {
	return &CommitLog{events: map[int32][]CommitEvent{}, errs: map[string]int{}}
}

func (l *CommitLog) add(p int32, e CommitEvent, commit bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events[p] = append(l.events[p], e)
	if commit {
		l.acked++
		l.lastAck = e.End
	} else {
		l.fetched++
	}
}

func (l *CommitLog) fail(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[what+": "+err.Error()]++
}

// Snapshot copies the sightings for VerifyCommits.
func (l *CommitLog) Snapshot() map[int32][]CommitEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int32][]CommitEvent{}
	for p, evs := range l.events {
		out[p] = append([]CommitEvent(nil), evs...)
	}
	return out
}

func (l *CommitLog) Counts() (acked, fetched int, lastAck time.Time, errs map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.fetched, l.lastAck, maps.Clone(l.errs)
}

// Members are the consumers of a group, each committing what it
// consumed after every poll, and a watcher polling the group's committed
// offsets with OffsetFetch.
type Members struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	Log    *CommitLog
}

// StartMembers starts n members of group consuming topic, and the
// watcher. Members block rebalances from a poll until their commit is done
// (kgo.BlockRebalanceOnPoll), and use the eager range assignor: a
// partition has one owner per generation, which commits with that
// generation, so that a correct coordinator never lets its committed
// offset step back.
func StartMembers(t testing.TB, bootstrap, group, topic string, n int) *Members {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Members{cancel: cancel, Log: newCommitLog()}
	t.Cleanup(m.Stop)
	for i := range n {
		opts := append(ClientLog(),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(),
			kgo.BlockRebalanceOnPoll(),
			kgo.Balancers(kgo.RangeBalancer()),
			kgo.SessionTimeout(10*time.Second),
			kgo.RebalanceTimeout(30*time.Second),
			kgo.HeartbeatInterval(time.Second),
			kgo.FetchMaxWait(500*time.Millisecond),
			kgo.DialTimeout(2*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		// Not testutil.Client: consume closes its client itself, to leave
		// the group before the final read.
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(strings.Split(bootstrap, ",")...))...)
		if err != nil {
			t.Fatalf("group member client: %v", err)
		}
		m.wg.Go(func() { m.consume(ctx, cl, fmt.Sprintf("member %d", i), topic) })
	}
	m.wg.Go(func() { m.watch(ctx, bootstrap, group, topic) })
	return m
}

func (m *Members) consume(ctx context.Context, cl *kgo.Client, name, topic string) {
	// Leave the group at the end, so that the final read is not held up by
	// a member the coordinator still waits for.
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 1000)
		offsets := map[int32]kgo.EpochOffset{}
		fs.EachRecord(func(r *kgo.Record) {
			offsets[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
		})
		if len(offsets) > 0 {
			m.commit(ctx, cl, name, topic, offsets)
		}
		cl.AllowRebalance()
		Wait(commitInterval)
	}
}

// commit commits offsets synchronously and logs each partition the
// coordinator acknowledged.
func (m *Members) commit(ctx context.Context, cl *kgo.Client, name, topic string, offsets map[int32]kgo.EpochOffset) {
	ctx, cancel := context.WithTimeout(ctx, 3*requestTimeout)
	defer cancel()
	start := time.Now()
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: offsets},
		func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			end := time.Now()
			if err != nil {
				m.Log.fail(name+" commit", err)
				return
			}
			who := fmt.Sprintf("%s (generation %d) commit [%s .. %s]", name, req.Generation,
				start.Format("15:04:05.000"), end.Format("15:04:05.000"))
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						m.Log.fail(name+" commit", err)
						continue
					}
					if o, ok := offsets[rp.Partition]; ok && rt.Topic == topic {
						m.Log.add(rp.Partition, CommitEvent{who, start, end, o.Offset}, true)
					}
				}
			}
		})
}

// watch asks for the group's committed offsets every offsetsPollInterval.
// A failed ask gets a new client: franz-go keeps a dead coordinator cached
// while dialing it fails.
func (m *Members) watch(ctx context.Context, bootstrap, group, topic string) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for ctx.Err() == nil {
		if cl == nil {
			var err error
			cl, err = kgo.NewClient(append(ClientLog(), kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.DialTimeout(2*time.Second))...)
			if err != nil {
				m.Log.fail("OffsetFetch client", err)
				return
			}
		}
		if err := m.fetchOnce(ctx, kadm.NewClient(cl), group, topic); err != nil {
			m.Log.fail("OffsetFetch", err)
			cl.Close()
			cl = nil
		}
		Wait(offsetsPollInterval)
	}
}

func (m *Members) fetchOnce(ctx context.Context, adm *kadm.Client, group, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*requestTimeout)
	defer cancel()
	start := time.Now()
	resps, err := adm.FetchOffsets(ctx, group)
	end := time.Now()
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return err
	}
	who := fmt.Sprintf("OffsetFetch [%s .. %s]", start.Format("15:04:05.000"), end.Format("15:04:05.000"))
	resps.Offsets().Each(func(o kadm.Offset) {
		if o.Topic == topic && o.At >= 0 {
			m.Log.add(o.Partition, CommitEvent{who, start, end, o.At}, false)
		}
	})
	return nil
}

// Stop ends the members (they leave the group) and the watcher; it is safe
// to call twice.
func (m *Members) Stop() {
	m.cancel()
	m.wg.Wait()
}
