package controller

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/internal/testutil"
)

// recordingStore notes, in order, the partition state reads and writes a
// controller makes.
type recordingStore struct {
	store.Store
	mu  sync.Mutex
	ops []string
}

func isStatePath(p string) bool {
	return strings.HasPrefix(p, "/brokers/topics/") && strings.HasSuffix(p, "/state")
}

func (r *recordingStore) note(op string) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recordingStore) Get(ctx context.Context, path string) ([]byte, store.Stat, error) {
	if isStatePath(path) {
		r.note("read")
	}
	return r.Store.Get(ctx, path)
}

func (r *recordingStore) Multi(ctx context.Context, ops ...store.Op) error {
	for _, op := range ops {
		if o, ok := op.(store.SetOp); ok && isStatePath(o.Path) {
			r.note("write")
		}
	}
	return r.Store.Multi(ctx, ops...)
}

func (r *recordingStore) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// cacheOf is a broker's metadata cache as the UpdateMetadata requests sent
// to it so far built it, in the form Config.CachedStates asks for.
func cacheOf(reqs []sentReq, broker int32) func(string, [16]byte) map[int32]PartitionState {
	type key struct {
		topic string
		id    [16]byte
	}
	m := map[key]map[int32]PartitionState{}
	for _, s := range reqs {
		r, ok := s.req.(*kmsg.UpdateMetadataRequest)
		if !ok || s.broker != broker {
			continue
		}
		for _, ts := range r.TopicStates {
			k := key{ts.Topic, ts.TopicID}
			if m[k] == nil {
				m[k] = map[int32]PartitionState{}
			}
			for _, ps := range ts.PartitionStates {
				m[k][ps.Partition] = StateFromUpdateMetadata(ps)
			}
		}
	}
	return func(topic string, id [16]byte) map[int32]PartitionState {
		out := maps.Clone(m[key{topic, id}])
		for p, st := range out {
			st.ISR = slices.Clone(st.ISR)
			out[p] = st
		}
		return out
	}
}

// seedAssignment is topic s: each of brokers 1-3 leads a partition, 1
// leads p3 too, and p4 is the only one without broker 1.
var seedAssignment = map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}, 3: {1, 3, 2}, 4: {2, 3, 4}}

// without is p's assignment without the brokers gone: its ISR after they
// leave, the first its leader.
func without(p int32, gone ...int32) []int32 {
	return slices.DeleteFunc(slices.Clone(seedAssignment[p]), func(r int32) bool { return slices.Contains(gone, r) })
}

// seedSetup registers brokers 1-4, lets controller 1 create topic s and
// tell broker 2, then stops controller 1 cleanly (its broker stays). It
// returns the brokers' sessions and the requests controller 1 sent.
func seedSetup(t *testing.T, db *store.DB) (map[int32]*store.Session, []sentReq) {
	t.Helper()
	ctx := context.Background()
	brokers := registerBrokers(t, db, 1, 2, 3, 4)
	f := newFakeSender()
	a := startController(t, db, 1, f, Config{})
	eventually(t, "controller 1 active", f, a.c.IsActive)
	if res := CreateTopics(ctx, brokers[1], []TopicSpec{{Name: "s", NumPartitions: -1, ReplicationFactor: -1, Assignment: seedAssignment}}, false); res[0].ErrorCode != 0 {
		t.Fatalf("create: %+v", res)
	}
	sent := f.waitFor(t, "UpdateMetadata of s to broker 2", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 2)
		return ok && len(r.TopicStates) == 1 && len(r.TopicStates[0].PartitionStates) == len(seedAssignment)
	})
	a.stop()
	if err := <-a.done; err != nil {
		t.Fatalf("controller 1: %v", err)
	}
	a.done <- nil
	return brokers, sent
}

// startSeeded runs controller 2 on a recording session, seeded from
// cache, logging to the returned buffer.
func startSeeded(t *testing.T, db *store.DB, cache func(string, [16]byte) map[int32]PartitionState) (*recordingStore, *fakeSender, *testutil.SyncBuffer) {
	t.Helper()
	rec := &recordingStore{Store: db.NewSession()}
	f := newFakeSender()
	logs := &testutil.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	c := New(Config{BrokerID: 2, DeleteTopicEnable: true, CachedStates: cache, Logger: slog.New(slog.NewTextHandler(logs, nil))}, rec, f)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return rec, f, logs
}

// setStateBehind rewrites a state znode's ISR as a broker below IBP 2.7
// would, unseen by any controller: a cache filled before it is out of date.
func setStateBehind(t *testing.T, s store.Store, p int32, isr []int32) {
	t.Helper()
	cur := readState(t, s, TP{"s", p})
	cur.ISR = isr
	if _, err := s.Set(context.Background(), PartitionStatePath("s", p), encodePartitionState(cur), cur.ZkVersion); err != nil {
		t.Fatal(err)
	}
}

// allStates waits until every partition state of s satisfies ok.
func allStates(t *testing.T, what string, f *fakeSender, s store.Store, ok func(p int32, st PartitionState) bool) {
	t.Helper()
	eventually(t, what, f, func() bool {
		for p := range int32(len(seedAssignment)) {
			if !ok(p, readState(t, s, TP{"s", p})) {
				return false
			}
		}
		return true
	})
}

// TestSeededFailoverWritesBeforeReading: a new controller whose broker's
// cache holds every state decides from it at once and writes the dead
// broker out of the ISRs; a write confirms its state, so only the state it
// did not write (p4) is read back, once, and only afterwards.
func TestSeededFailoverWritesBeforeReading(t *testing.T) {
	db := testDB(t)
	brokers, sent := seedSetup(t, db)
	brokers[1].Close() // dies while no controller watches
	rec, f, logs := startSeeded(t, db, cacheOf(sent, 2))
	allStates(t, "broker 1 out of every state", f, rec.Store, func(p int32, st PartitionState) bool {
		want := without(p, 1)
		return st.Leader == want[0] && slices.Equal(st.ISR, want)
	})
	eventually(t, "the unwritten state confirmed", f, func() bool {
		return strings.Contains(logs.String(), `msg="cached partition states confirmed" component=controller partitions=1`)
	})
	ops := rec.recorded()
	reads := len(slices.DeleteFunc(slices.Clone(ops), func(s string) bool { return s != "read" }))
	if firstWrite, firstRead := slices.Index(ops, "write"), slices.Index(ops, "read"); firstWrite < 0 || firstRead < firstWrite || reads != 1 {
		t.Fatalf("state reads and writes %v: want the writes, then one read", ops)
	}
}

// TestSeededStaleStateReadBeforeDeciding: a state changed behind the
// cache's back fails the new controller's conditional write; it then
// reads every state and decides from the znode, not from the cache.
func TestSeededStaleStateReadBeforeDeciding(t *testing.T) {
	db := testDB(t)
	brokers, sent := seedSetup(t, db)
	setStateBehind(t, brokers[2], 0, []int32{1, 2}) // 3 left p0's ISR
	brokers[1].Close()
	rec, f, _ := startSeeded(t, db, cacheOf(sent, 2))
	allStates(t, "broker 1 out of every state, p0 from its znode", f, rec.Store, func(p int32, st PartitionState) bool {
		want := without(p, 1)
		if p == 0 {
			want = []int32{2} // not [2 3]: 3 was out of the ISR
		}
		return st.Leader == want[0] && slices.Equal(st.ISR, want)
	})
}

// TestSeededStateConfirmedAfterTerm: a state changed behind the cache's
// back that the failover does not write is found by the read-back, and
// the brokers learn the state the znode holds.
func TestSeededStateConfirmedAfterTerm(t *testing.T) {
	db := testDB(t)
	brokers, sent := seedSetup(t, db)
	setStateBehind(t, brokers[2], 1, []int32{2, 3}) // 1 left p1's ISR
	_, f, _ := startSeeded(t, db, cacheOf(sent, 2))
	f.waitFor(t, "UpdateMetadata with p1 as its znode has it", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 3)
		if !ok {
			return false
		}
		for _, ts := range r.TopicStates {
			for _, ps := range ts.PartitionStates {
				if ts.Topic == "s" && ps.Partition == 1 && ps.ZKVersion == 1 && slices.Equal(ps.ISR, []int32{2, 3}) {
					return true
				}
			}
		}
		return false
	})
}

// TestSeedSkipsStatesOfRestartedBrokers: a broker that restarted while no
// controller watched leaves the ISRs it was in, as OnElected does for
// states read from the store; its states are not taken from the cache,
// which cannot say when they were written.
func TestSeedSkipsStatesOfRestartedBrokers(t *testing.T) {
	db := testDB(t)
	brokers, sent := seedSetup(t, db)
	brokers[1].Close()
	brokers[3].Close()
	registerBrokers(t, db, 3) // 3 is back, registered after every state
	rec, f, _ := startSeeded(t, db, cacheOf(sent, 2))
	allStates(t, "1 and 3 out of every ISR", f, rec.Store, func(p int32, st PartitionState) bool {
		want := without(p, 1, 3)
		return st.Leader == want[0] && slices.Equal(st.ISR, want)
	})
}

// TestSteppedSeedReadBackInStep: a stepped controller seeds its load too,
// reads nothing during StartTerm, and reads the states back in its next
// Step, where one found changed behind the cache's back is taken up.
func TestSteppedSeedReadBackInStep(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	brokers, sent := seedSetup(t, db)
	setStateBehind(t, brokers[2], 1, []int32{2, 3})
	env := &fakeEnv{}
	rec := &recordingStore{Store: db.NewSession()}
	c := NewStepped(Config{BrokerID: 2, DeleteTopicEnable: true, CachedStates: cacheOf(sent, 2)}, rec, env)
	if won, _, err := c.TryElect(ctx); err != nil || !won {
		t.Fatalf("elect: won %v err %v", won, err)
	}
	if err := c.StartTerm(ctx); err != nil {
		t.Fatal(err)
	}
	if ops := rec.recorded(); len(ops) != 0 || env.wakes == 0 {
		t.Fatalf("state reads and writes during StartTerm %v, wakes %d: want none, and a Step asked for", ops, env.wakes)
	}
	if st := c.State().Topics["s"].States[1]; st.ZkVersion != 0 {
		t.Fatalf("p1 before the read-back: %+v, want the cached version 0", st)
	}
	if err := c.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c.State().Topics["s"].States[1]; st.ZkVersion != 1 || !slices.Equal(st.ISR, []int32{2, 3}) {
		t.Fatalf("p1 after the read-back: %+v, want version 1 with ISR [2 3]", st)
	}
}
