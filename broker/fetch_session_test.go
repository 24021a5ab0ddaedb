package broker

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// sessionFetch is a fetch of topic's partitions parts (at offsets), in
// session id at epoch, answered at once.
func sessionFetch(version int16, id, epoch int32, topic string, parts map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	req.SessionID, req.SessionEpoch = id, epoch
	if len(parts) == 0 {
		return req
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, parts[p], 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchedPartitions lists the partitions a response carries, with the
// bytes of records each holds.
func fetchedPartitions(resp *kmsg.FetchResponse) map[int32]int {
	out := map[int32]int{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = len(p.RecordBatches)
		}
	}
	return out
}

// TestFetchSessionIncremental walks one consumer session through KIP-227:
// a full fetch creates it, incremental fetches carry only what changed,
// forgotten partitions leave it, a wrong epoch is refused, epoch -1 closes it.
func TestFetchSessionIncremental(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("fs", 3, nil)
	c := dialProbe(t, tb.addr)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		return c.roundTrip(req).(*kmsg.FetchResponse)
	}

	full := fetch(sessionFetch(12, 0, 0, "fs", map[int32]int64{0: 0, 1: 0, 2: 0}))
	if full.ErrorCode != 0 || full.SessionID == 0 {
		t.Fatalf("full fetch: error %d, session %d; want a new session", full.ErrorCode, full.SessionID)
	}
	if got := fetchedPartitions(full); len(got) != 3 {
		t.Fatalf("full fetch returned partitions %v, want all 3", got)
	}
	id := full.SessionID

	r := fetch(sessionFetch(12, id, 1, "fs", nil))
	if r.ErrorCode != 0 || r.SessionID != id || len(fetchedPartitions(r)) != 0 {
		t.Fatalf("idle incremental fetch: error %d, session %d, partitions %v; want none in session %d", r.ErrorCode, r.SessionID, fetchedPartitions(r), id)
	}

	produceRaw(t, tb, "fs", 1, -1, rawBatch(t, 1, 10, nil), nil)
	r = fetch(sessionFetch(12, id, 2, "fs", nil))
	if got := fetchedPartitions(r); len(got) != 1 || got[1] == 0 {
		t.Fatalf("incremental fetch after a produce to partition 1 returned %v, want only partition 1 with records", got)
	}

	// The consumer moves partition 1 on; nothing changed, nothing is sent.
	r = fetch(sessionFetch(12, id, 3, "fs", map[int32]int64{1: 1}))
	if got := fetchedPartitions(r); len(got) != 0 {
		t.Fatalf("incremental fetch at the new offset returned %v, want none", got)
	}

	forget := sessionFetch(12, id, 4, "fs", nil)
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.Partitions = "fs", []int32{2}
	forget.ForgottenTopics = append(forget.ForgottenTopics, ft)
	if r = fetch(forget); r.ErrorCode != 0 || len(fetchedPartitions(r)) != 0 {
		t.Fatalf("forgetting partition 2: error %d, partitions %v", r.ErrorCode, fetchedPartitions(r))
	}
	produceRaw(t, tb, "fs", 2, -1, rawBatch(t, 1, 10, nil), nil)
	produceRaw(t, tb, "fs", 0, -1, rawBatch(t, 1, 10, nil), nil)
	r = fetch(sessionFetch(12, id, 5, "fs", nil))
	if got := fetchedPartitions(r); len(got) != 1 || got[0] == 0 {
		t.Fatalf("after forgetting partition 2 and producing to 0 and 2, got %v, want only partition 0", got)
	}

	r = fetch(sessionFetch(12, id, 99, "fs", nil))
	if r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || r.SessionID != 0 {
		t.Fatalf("wrong epoch: error %d, session %d; want INVALID_FETCH_SESSION_EPOCH and session 0", r.ErrorCode, r.SessionID)
	}
	// A wrong epoch leaves the session as it was.
	if r = fetch(sessionFetch(12, id, 6, "fs", nil)); r.ErrorCode != 0 || r.SessionID != id {
		t.Fatalf("right epoch after a wrong one: error %d, session %d", r.ErrorCode, r.SessionID)
	}
	if r = fetch(sessionFetch(12, id+1, 1, "fs", nil)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: error %d, want FETCH_SESSION_ID_NOT_FOUND", r.ErrorCode)
	}

	// Epoch -1 closes the session and is answered as a sessionless full fetch.
	r = fetch(sessionFetch(12, id, -1, "fs", map[int32]int64{0: 0}))
	if r.ErrorCode != 0 || r.SessionID != 0 || len(fetchedPartitions(r)) != 1 {
		t.Fatalf("closing fetch: error %d, session %d, partitions %v", r.ErrorCode, r.SessionID, fetchedPartitions(r))
	}
	if r = fetch(sessionFetch(12, id, 7, "fs", nil)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", r.ErrorCode)
	}
}

// TestFetchSessionEvicted fills a one-slot cache: a second consumer gets no
// session while the first is fresh, and evicts it once it has been idle
// longer than Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
func TestFetchSessionEvicted(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_000_000, 0))
	tb := startBrokerWith(t, map[string]string{"max.incremental.fetch.session.cache.slots": "1"}, func(b *Broker) { b.fetchSessionNow = clock.Now })
	tb.createTopic("fe", 1, nil)
	c := dialProbe(t, tb.addr)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		return c.roundTrip(req).(*kmsg.FetchResponse)
	}
	a := fetch(sessionFetch(12, 0, 0, "fe", map[int32]int64{0: 0}))
	if a.SessionID == 0 {
		t.Fatal("first full fetch got no session")
	}
	if b := fetch(sessionFetch(12, 0, 0, "fe", map[int32]int64{0: 0})); b.SessionID != 0 || len(fetchedPartitions(b)) != 1 {
		t.Fatalf("second full fetch with the slot taken: session %d, partitions %v; want no session, all partitions", b.SessionID, fetchedPartitions(b))
	}
	clock.Advance((fetchSessionEvictionMs + 1) * time.Millisecond)
	b := fetch(sessionFetch(12, 0, 0, "fe", map[int32]int64{0: 0}))
	if b.SessionID == 0 || b.SessionID == a.SessionID {
		t.Fatalf("full fetch after the first session went stale: session %d (first %d), want a new one", b.SessionID, a.SessionID)
	}
	if r := fetch(sessionFetch(12, a.SessionID, 1, "fe", nil)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("evicted session: error %d, want FETCH_SESSION_ID_NOT_FOUND", r.ErrorCode)
	}
}

// TestFetchSessionLongPoll: an incremental fetch of idle partitions waits,
// and a produce to one of them answers it with only that partition.
func TestFetchSessionLongPoll(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("fl", 3, nil)
	c := dialProbe(t, tb.addr)
	full := c.roundTrip(sessionFetch(12, 0, 0, "fl", map[int32]int64{0: 0, 1: 0, 2: 0})).(*kmsg.FetchResponse)
	if full.SessionID == 0 {
		t.Fatal("no session")
	}
	poll := sessionFetch(12, full.SessionID, 1, "fl", nil)
	poll.MaxWaitMillis = 20_000
	c.send(poll)
	// Produce once the fetch watches its partitions, so that the append
	// wakes it rather than its first read finding the records.
	testutil.Eventually(t, 30*time.Second, func() error {
		if tb.leaderOf("fl", 2).Watchers() == 0 {
			return errors.New("the fetch does not wait yet")
		}
		return nil
	})
	produceRaw(t, tb, "fl", 2, -1, rawBatch(t, 1, 10, nil), nil)
	resp, err := c.recv(poll, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.FetchResponse)
	if got := fetchedPartitions(r); r.ErrorCode != 0 || len(got) != 1 || got[2] == 0 {
		t.Fatalf("long-polled incremental fetch: error %d, partitions %v; want only partition 2 with records", r.ErrorCode, got)
	}
}

// TestFetchSessionTopicIDs: a v13 session names partitions by topic id; a
// partition of an unknown id stays in it and is sent with UNKNOWN_TOPIC_ID
// each time; a v12 fetch in it is FETCH_SESSION_TOPIC_ID_ERROR.
func TestFetchSessionTopicIDs(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("fid", 1, nil)
	md, err := tb.admin().Metadata(testContext(t), "fid")
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["fid"].ID
	c := dialProbe(t, tb.addr)
	byID := func(sid, epoch int32, ids ...[16]byte) *kmsg.FetchRequest {
		req := sessionFetch(13, sid, epoch, "", nil)
		for _, tid := range ids {
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = tid
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	codes := func(r *kmsg.FetchResponse) map[[16]byte]int16 {
		out := map[[16]byte]int16{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out[t.TopicID] = p.ErrorCode
			}
		}
		return out
	}
	unknown := [16]byte{9, 9, 9}
	full := c.roundTrip(byID(0, 0, id, unknown)).(*kmsg.FetchResponse)
	if full.SessionID == 0 || len(codes(full)) != 2 {
		t.Fatalf("full v13 fetch: session %d, partitions %v", full.SessionID, codes(full))
	}
	r := c.roundTrip(byID(full.SessionID, 1)).(*kmsg.FetchResponse)
	if got := codes(r); len(got) != 1 || got[unknown] != kerr.UnknownTopicID.Code {
		t.Fatalf("incremental v13 fetch: %v, want only the unknown id, with UNKNOWN_TOPIC_ID", got)
	}
	produceRaw(t, tb, "fid", 0, -1, rawBatch(t, 1, 10, nil), nil)
	r = c.roundTrip(byID(full.SessionID, 2)).(*kmsg.FetchResponse)
	if got := codes(r); len(got) != 2 || got[id] != 0 {
		t.Fatalf("incremental v13 fetch after a produce: %v, want both", got)
	}
	if r = c.roundTrip(sessionFetch(12, full.SessionID, 3, "fid", nil)).(*kmsg.FetchResponse); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v12 fetch in a v13 session: error %d, want FETCH_SESSION_TOPIC_ID_ERROR", r.ErrorCode)
	}
}

// TestFetchSessionFranzGo: franz-go consumers fetch in sessions by default;
// they get every record, before and after their session goes incremental.
func TestFetchSessionFranzGo(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("fk", 4, nil)
	ctx := testContext(t)
	prod := tb.client(kgo.DefaultProduceTopic("fk"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produce := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cons := tb.client(kgo.ConsumeTopics("fk"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]bool{}
	consume := func(want int) {
		t.Helper()
		for len(seen) < want {
			fs := cons.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("poll: %v", err)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
	}
	produce(0, 40)
	consume(40)
	produce(40, 40)
	consume(80)
	for i := range 80 {
		if !seen[strconv.Itoa(i)] {
			t.Fatalf("record %d not consumed", i)
		}
	}
	fs := tb.b.fetchSessions
	fs.mu.Lock()
	defer fs.mu.Unlock()
	incremental := false
	for _, s := range fs.cache.sessions {
		incremental = incremental || s.epoch > 2
	}
	if !incremental {
		t.Errorf("no session went incremental: %d sessions", len(fs.cache.sessions))
	}
}

// TestFetchSessionFollowers: followers fetch in privileged sessions and go
// incremental, and replication still copies every record.
func TestFetchSessionFollowers(t *testing.T) {
	c := startReplCluster(t)
	ctx := testContext(t)
	adm := kadm.NewClient(c.client())
	leader := c.createReplicated(ctx, adm, "fsr", nil)
	producer := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20))
	produceAcked(ctx, t, producer, "fsr", "a", 50)
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical("fsr", 1, 2, 3) })
	produceAcked(ctx, t, producer, "fsr", "b", 50)
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical("fsr", 1, 2, 3) })
	fs := c.brokers[leader].b.fetchSessions
	testutil.Eventually(t, 30*time.Second, func() error {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		n := 0
		for _, s := range fs.cache.sessions {
			if s.privileged && s.epoch > 2 {
				n++
			}
		}
		if n < 2 {
			return fmt.Errorf("%d incremental follower sessions on leader %d, want 2 (%d sessions)", n, leader, len(fs.cache.sessions))
		}
		return nil
	})

	// Idle, the followers' partition is quiet in their sessions (the
	// leader skips reading it), yet the leader still records their
	// fetches: past replica.lag.time.max.ms (3 s here) of idleness both
	// followers are still in the ISR and were caught up within it.
	idleSince := time.Now()
	part := c.brokers[leader].b.replicas.Get("fsr", 0)
	testutil.Eventually(t, 60*time.Second, func() error {
		fs.mu.Lock()
		quiet := 0
		for _, s := range fs.cache.sessions {
			for _, sp := range s.parts {
				if s.privileged && sp.quiet.part != nil {
					quiet++
				}
			}
		}
		fs.mu.Unlock()
		if quiet < 2 {
			return fmt.Errorf("%d quiet partitions in follower sessions, want 2", quiet)
		}
		_, followers, ok := part.ReadReplicas(part.HighWatermark())
		if !ok || len(followers) != 2 {
			return fmt.Errorf("followers in the ISR: %v (leading: %v), want 2", followers, ok)
		}
		for _, f := range followers {
			if f.SinceCaughtUp >= 3*time.Second {
				return fmt.Errorf("follower %d last caught up %v ago", f.ID, f.SinceCaughtUp)
			}
		}
		if idle := time.Since(idleSince); idle < 7*time.Second {
			return fmt.Errorf("idle for %v, not yet twice replica.lag.time.max.ms", idle)
		}
		return nil
	})
}
