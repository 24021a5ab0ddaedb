package group

import (
	"bytes"
	"github.com/brook-mq/brook/internal/testutil"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// appendRecords writes records as one batch, optionally compressed, as
// another coordinator (Kafka with offsets.topic.compression.codec) might.
func appendRecords(t *testing.T, p *memPartition, codec batch.Compression, recs ...record) {
	t.Helper()
	brs := make([]batch.Record, len(recs))
	for i, r := range recs {
		brs[i] = batch.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
	}
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, Compression: codec, BaseTimestamp: 1}, brs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(t.Context(), b); err != nil {
		t.Fatal(err)
	}
}

func TestLoadCompressedAndTombstones(t *testing.T) {
	p := &memPartition{}
	e1 := offsetEntry{offset: 1, leaderEpoch: 2, metadata: "a", commitTimestamp: 5, expireTimestamp: -1}
	e2 := offsetEntry{offset: 9, leaderEpoch: -1, metadata: "b", commitTimestamp: 6, expireTimestamp: 100}
	appendRecords(t, p, batch.Gzip,
		offsetRecord("g", topicPartition{"t", 0}, e1),
		offsetRecord("g", topicPartition{"t", 1}, e2),
		offsetRecord("gone", topicPartition{"t", 0}, e1),
	)
	appendRecords(t, p, batch.Zstd, offsetTombstone("gone", topicPartition{"t", 0}), groupTombstone("gone"))
	// A record type of a newer coordinator (key version 3+) is skipped.
	future := append([]byte{0, 9}, []byte("whatever")...)
	appendRecords(t, p, batch.None, record{key: future, value: []byte("x")})

	e := &env{t: t, clock: testutil.NewClock(time.Unix(1_700_000_000, 0)), p: p}
	e.ctx = t.Context()
	e.start()
	_, topics := e.fetch("g")
	if len(topics) != 1 || len(topics[0].Partitions) != 2 {
		t.Fatalf("loaded %+v", topics)
	}
	got := topics[0].Partitions
	if got[0].Offset != 1 || got[0].LeaderEpoch != 2 || deref(got[0].Metadata) != "a" || got[1].Offset != 9 {
		t.Fatalf("loaded offsets %+v", got)
	}
	if _, topics := e.fetch("gone"); len(topics) != 0 {
		t.Fatalf("tombstoned offsets loaded: %+v", topics)
	}
}

func TestLoadCorruptPartitionStaysLoading(t *testing.T) {
	p := &memPartition{}
	appendRecords(t, p, batch.None, offsetRecord("g", tp0, entry(1, "")))
	p.batches[0][len(p.batches[0])-1] ^= 0xff // breaks the CRC
	c := New(Config{NumPartitions: 1})
	defer c.Close()
	c.OnElected(0, 0, p)
	// The load fails and is retried; requests keep getting the load
	// error rather than an empty group.
	for i := 0; i < 3; i++ {
		resp := c.OffsetFetch(t.Context(), &kmsg.OffsetFetchRequest{Version: 8, Groups: []kmsg.OffsetFetchRequestGroup{{Group: "g"}}})
		wantCode(t, "fetch", resp.Groups[0].ErrorCode, kerr.CoordinatorLoadInProgress)
	}
}

func FuzzLoaderApply(f *testing.F) {
	g := newGroup("g", time.Unix(0, 0))
	g.protocolType, g.protocolName, g.generation = "consumer", "range", 3
	g.add(&member{id: "m", instanceID: "i", protocolType: "consumer", protocols: []protocol{{name: "range", metadata: []byte{1}}}})
	seeds := []record{
		offsetRecord("g", tp0, entry(1, "meta")),
		offsetRecord("g", tp0, offsetEntry{offset: 1, expireTimestamp: 9}),
		offsetTombstone("g", tp0),
		groupMetadataRecord(g, map[string][]byte{"m": {2}}),
		groupTombstone("g"),
		{key: []byte{}, value: nil},
		{key: []byte{0, 2}, value: []byte{0, 3}},
	}
	for _, s := range seeds {
		f.Add(s.key, s.value)
		f.Add(append(bytes.Clone(s.key), 0xff), s.value)
		if s.value != nil {
			f.Add(s.key, append(bytes.Clone(s.value), 1, 2, 3))
			f.Add(s.key, s.value[:len(s.value)/2])
		}
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		l := newLoader()
		if _, err := l.apply(key, value); err != nil {
			return
		}
		// Whatever decoded must build into consistent groups.
		for _, g := range l.build(time.Unix(0, 0)) {
			if err := checkInvariants(g); err != nil {
				t.Fatalf("loaded group %q: %v", g.id, err)
			}
		}
	})
}

// TestLoadReadsToLogEnd: a new coordinator's high watermark trails its log
// end until the followers fetch again, and the records in between were
// acknowledged by the previous coordinator. The load replays them all:
// commits, the generation of a live group, the deletion of a group.
func TestLoadReadsToLogEnd(t *testing.T) {
	e := newEnv(t)
	wantCode(t, "old commit", e.commit(8, "simple", "", -1, "t", 0, 1, ""), nil)
	committed := e.p.LogEndOffset()

	member, gen := e.stable("live", nil)
	wantCode(t, "live commit", e.commit(8, "live", member, gen, "t", 0, 7, ""), nil)
	wantCode(t, "new commit", e.commit(8, "simple", "", -1, "t", 0, 2, ""), nil)
	wantCode(t, "gone commit", e.commit(8, "gone", "", -1, "t", 0, 3, ""), nil)
	del := e.c.DeleteGroups(e.ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"gone"}})
	wantCode(t, "delete", del.Groups[0].ErrorCode, nil)

	// Failover: the next coordinator knows only the old high watermark,
	// and serves what it loaded once the followers' fetches move the HW
	// to the loaded end (TestLoadServedOnceCommitted).
	e.p.setHWLag(e.p.LogEndOffset() - committed)
	e.c.Close()
	e.startLoading()
	code, _ := e.fetch("live")
	wantCode(t, "fetch before the HW reaches the loaded end", code, kerr.CoordinatorLoadInProgress)
	e.p.setHWLag(0)
	e.waitLoaded()

	for group, want := range map[string]int64{"simple": 2, "live": 7} {
		_, topics := e.fetch(group)
		if len(topics) != 1 || topics[0].Partitions[0].Offset != want {
			t.Fatalf("group %q after failover: %+v, want offset %d", group, topics, want)
		}
	}
	hb := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 4, Group: "live", MemberID: member, Generation: gen})
	wantCode(t, "heartbeat of the live member", hb.ErrorCode, nil)
	if _, topics := e.fetch("gone"); len(topics) != 0 {
		t.Fatalf("deleted group came back: %+v", topics)
	}
}

// TestLoadServedOnceCommitted: the group metadata a leader's SyncGroup
// appended may never be committed (an ISR member had stopped fetching), so
// the old coordinator never answered it; a new coordinator loads it above
// its HW. Served at once, as Kafka serves it, the group is Stable at that
// generation and a member's SyncGroup gets its assignment from memory; a
// failover to the ISR member that never had the record then loses the
// generation, and the next coordinator hands its number out again with
// another leader (simulation seed 4358 without the simple consumers). The
// coordinator answers COORDINATOR_LOAD_IN_PROGRESS until the HW reaches
// the loaded end (a SyncGroup meanwhile gets REBALANCE_IN_PROGRESS, as
// from Kafka's loading coordinator, and rejoins);
// group.Faults.ActAboveHighWatermark restores Kafka's way.
func TestLoadServedOnceCommitted(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	p := &asyncPartition{memPartition: &memPartition{}}
	g := newGroup("g", clock.Now())
	g.protocolName, g.generation = "range", 1
	g.add(&member{
		id: "m", protocolType: "consumer", protocols: []protocol{{name: "range", metadata: consumerMeta("t")}},
		sessionTimeout: 10 * time.Second, rebalanceTimeout: 30 * time.Second,
	})
	appendRecords(t, p.memPartition, batch.None, groupMetadataRecord(g, map[string][]byte{"m": []byte("assigned")}))
	p.setHWLag(p.LogEndOffset()) // the new leader's HW is still 0
	sync := func(c *Coordinator) *kmsg.SyncGroupResponse {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 5, "g", "m", 1
		return c.SyncGroup(t.Context(), req)
	}
	elect := func(faults Faults) *Coordinator {
		c := New(Config{NumPartitions: 1, Now: clock.Now, MinSessionTimeout: time.Second, Faults: faults})
		t.Cleanup(c.Close)
		c.OnElected(0, 1, p)
		c.Step() // loads
		return c
	}

	c := elect(Faults{})
	fetch := func() int16 {
		return c.OffsetFetch(t.Context(), &kmsg.OffsetFetchRequest{Version: 8, Groups: []kmsg.OffsetFetchRequestGroup{{Group: "g"}}}).Groups[0].ErrorCode
	}
	for range 2 {
		wantCode(t, "sync above the HW", sync(c).ErrorCode, kerr.RebalanceInProgress)
		wantCode(t, "fetch above the HW", fetch(), kerr.CoordinatorLoadInProgress)
		c.Step() // the HW has not moved: still waiting
	}
	p.setHWLag(0) // the followers fetched
	c.Step()
	if r := sync(c); r.ErrorCode != 0 || string(r.MemberAssignment) != "assigned" {
		t.Fatalf("sync once committed: %v %q, want the loaded assignment", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}
	c.Close()

	p.setHWLag(p.LogEndOffset())
	if r := sync(elect(Faults{ActAboveHighWatermark: true})); r.ErrorCode != 0 || string(r.MemberAssignment) != "assigned" {
		t.Fatalf("sync above the HW with the fault: %v %q, want the loaded assignment (Kafka's way)", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}
}
