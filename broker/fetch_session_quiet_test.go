package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchedCodes lists the partitions a response carries with their error
// codes and log start offsets.
func fetchedCodes(resp *kmsg.FetchResponse) map[int32]kmsg.FetchResponseTopicPartition {
	out := map[int32]kmsg.FetchResponseTopicPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

// TestFetchSessionReadsOnlyChanged: an incremental fetch reads only the
// partitions of its session that changed since it last answered (or that
// the request names), not all of them: with nothing changed it reads none,
// after a produce to one of 100 partitions it reads that one.
func TestFetchSessionReadsOnlyChanged(t *testing.T) {
	const n = 100
	tb := startBroker(t, nil)
	tb.createTopic("fq", n, nil)
	c := dialProbe(t, tb.addr)
	fetch := func(req *kmsg.FetchRequest) (*kmsg.FetchResponse, int64) {
		t.Helper()
		before := tb.b.fetchSessions.partitionsRead.Load()
		r := c.roundTrip(req).(*kmsg.FetchResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("fetch: error %d", r.ErrorCode)
		}
		return r, tb.b.fetchSessions.partitionsRead.Load() - before
	}
	all := map[int32]int64{}
	for p := range int32(n) {
		all[p] = 0
	}
	full, read := fetch(sessionFetch(12, 0, 0, "fq", all))
	if full.SessionID == 0 || read != n {
		t.Fatalf("full fetch: session %d, %d partitions read; want a session and %d", full.SessionID, read, n)
	}
	id := full.SessionID
	epoch := int32(1)
	next := func(parts map[int32]int64) (*kmsg.FetchResponse, int64) {
		t.Helper()
		r, read := fetch(sessionFetch(12, id, epoch, "fq", parts))
		epoch++
		return r, read
	}
	if r, read := next(nil); len(fetchedPartitions(r)) != 0 || read != 0 {
		t.Fatalf("idle incremental fetch: partitions %v, %d read; want none and 0", fetchedPartitions(r), read)
	}
	produceRaw(t, tb, "fq", 37, -1, rawBatch(t, 1, 10, nil), nil)
	if r, read := next(nil); len(fetchedPartitions(r)) != 1 || fetchedPartitions(r)[37] == 0 || read != 1 {
		t.Fatalf("incremental fetch after a produce to partition 37: partitions %v, %d read; want only 37 with records, 1 read", fetchedPartitions(r), read)
	}
	// The consumer moves partition 37 on: named in the request, it is read.
	if r, read := next(map[int32]int64{37: 1}); len(fetchedPartitions(r)) != 0 || read != 1 {
		t.Fatalf("incremental fetch at 37's new offset: partitions %v, %d read; want none and 1", fetchedPartitions(r), read)
	}
	if r, read := next(nil); len(fetchedPartitions(r)) != 0 || read != 0 {
		t.Fatalf("idle incremental fetch: partitions %v, %d read; want none and 0", fetchedPartitions(r), read)
	}
}

// TestFetchSessionQuietPartitionChanges: a partition the session skips as
// unchanged is sent again after each kind of change Kafka's incremental
// fetch reports: a new log start offset (DeleteRecords), a fetch offset
// moved back by the consumer (records again), the topic's deletion (an
// error).
func TestFetchSessionQuietPartitionChanges(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("fc", 2, nil)
	produceRaw(t, tb, "fc", 0, -1, rawBatch(t, 4, 10, nil), nil)
	c := dialProbe(t, tb.addr)
	full := c.roundTrip(sessionFetch(12, 0, 0, "fc", map[int32]int64{0: 4, 1: 0})).(*kmsg.FetchResponse)
	if full.SessionID == 0 || len(fetchedCodes(full)) != 2 {
		t.Fatalf("full fetch: session %d, partitions %v", full.SessionID, fetchedCodes(full))
	}
	id, epoch := full.SessionID, int32(1)
	next := func(parts map[int32]int64) map[int32]kmsg.FetchResponseTopicPartition {
		t.Helper()
		r := c.roundTrip(sessionFetch(12, id, epoch, "fc", parts)).(*kmsg.FetchResponse)
		epoch++
		if r.ErrorCode != 0 {
			t.Fatalf("incremental fetch at epoch %d: error %d", epoch-1, r.ErrorCode)
		}
		return fetchedCodes(r)
	}
	if got := next(nil); len(got) != 0 {
		t.Fatalf("idle incremental fetch: %v, want none", got)
	}

	ctx := testContext(t)
	adm := tb.admin()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "fc", Partition: 0, At: 2})
	if dr, err := adm.DeleteRecords(ctx, offsets); err != nil {
		t.Fatal(err)
	} else if d, _ := dr.Lookup("fc", 0); d.Err != nil {
		t.Fatal(d.Err)
	}
	if got := next(nil); len(got) != 1 || got[0].LogStartOffset != 2 || len(got[0].RecordBatches) != 0 {
		t.Fatalf("incremental fetch after DeleteRecords: %v, want partition 0 alone with log start 2 and no records", got)
	}
	if got := next(nil); len(got) != 0 {
		t.Fatalf("idle incremental fetch: %v, want none", got)
	}

	if got := next(map[int32]int64{0: 2}); len(got) != 1 || len(got[0].RecordBatches) == 0 {
		t.Fatalf("incremental fetch moving partition 0 back to offset 2: %v, want its records", got)
	}
	if got := next(map[int32]int64{0: 4}); len(got) != 0 {
		t.Fatalf("incremental fetch at partition 0's end: %v, want none", got)
	}

	del, err := adm.DeleteTopics(ctx, "fc")
	if err == nil {
		var r kadm.DeleteTopicResponse
		if r, err = del.On("fc", nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := next(nil); len(got) != 2 || got[0].ErrorCode == 0 || got[1].ErrorCode == 0 {
		t.Fatalf("incremental fetch after the topic's deletion: %v, want both partitions with an error", got)
	}
}

// TestQuietFollowerFetchBrokerEpoch: a follower's partition quiet in its
// incremental session still has its fetch recorded with the follower's
// broker epoch (stillQuiet), so that a later fetch of an earlier
// incarnation is refused (NOT_LEADER_OR_FOLLOWER), and one of a new
// incarnation resets what the leader knew of the follower: fetching
// behind the log end, it is no longer taken as caught up a moment ago.
func TestQuietFollowerFetchBrokerEpoch(t *testing.T) {
	const follower, epoch = 1, 10
	tb := startBroker(t, nil)
	tb.createTopic("fe", 1, nil)
	produceRaw(t, tb, "fe", 0, 1, rawBatch(t, 2, 10, nil), nil)
	part := tb.leaderOf("fe", 0)
	leo := part.FetchState().LogEnd
	addInSyncFollowers(t, tb, "fe", follower)
	session := followerSession(t, tb, "fe", 15)
	// fetch is the follower's Fetch v15 at brokerEpoch.
	fetch := func(brokerEpoch, offset int64) (*kmsg.FetchResponse, int64) {
		t.Helper()
		return session(offset, func(req *kmsg.FetchRequest) {
			req.ReplicaState.ID, req.ReplicaState.Epoch = follower, brokerEpoch
			for i := range req.Topics {
				req.Topics[i].TopicID = part.TopicID()
			}
		})
	}
	if r, _ := fetch(epoch, leo); r.SessionID == 0 || fetchedCodes(r)[0].ErrorCode != 0 {
		t.Fatalf("full fetch at the log end: session %d, %v", r.SessionID, fetchedCodes(r))
	}
	if r, read := fetch(epoch, -1); len(fetchedCodes(r)) != 0 || read != 0 {
		t.Fatalf("incremental fetch with nothing new: partitions %v, %d read; want the partition quiet", fetchedCodes(r), read)
	}
	if r, _ := fetch(epoch-1, -1); fetchedCodes(r)[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch of an earlier incarnation: %v, want NOT_LEADER_OR_FOLLOWER", fetchedCodes(r))
	}
	if r, _ := fetch(epoch+1, leo-1); fetchedCodes(r)[0].ErrorCode != 0 {
		t.Fatalf("fetch of a new incarnation: %v", fetchedCodes(r))
	}
	// Reset, the follower fetching behind the log end was never seen
	// caught up; kept, it would count as caught up at its first fetch.
	_, followers, ok := part.ReadReplicas(0)
	if !ok || (len(followers) == 0 && slices.Contains(part.State().ISR, follower)) {
		t.Fatalf("leading: %v, followers %v of ISR %v", ok, followers, part.State().ISR)
	}
	for _, f := range followers {
		if f.ID == follower && f.SinceCaughtUp < time.Hour {
			t.Fatalf("follower %d last caught up %v ago: the new incarnation was credited with the earlier one's fetches", f.ID, f.SinceCaughtUp)
		}
	}
}

// TestQuietFollowerFetchMovesHW: a follower's fetch of a partition its
// session holds quiet can move the high watermark (the leader last heard
// of the follower at a lower offset than its session's, the partition's
// state unchanged); the partition is then read and the new high
// watermark sent to the follower, as a read of it would.
func TestQuietFollowerFetchMovesHW(t *testing.T) {
	const follower, other = 1, 2
	tb := startBroker(t, nil)
	tb.createTopic("fh", 1, nil)
	part := tb.leaderOf("fh", 0)
	addInSyncFollowers(t, tb, "fh", follower, other)
	// Produced with followers in the ISR, the records stay above the HW.
	if r := produceRaw(t, tb, "fh", 0, 1, rawBatch(t, 2, 10, nil), nil); r.ErrorCode != 0 {
		t.Fatalf("produce: error %d", r.ErrorCode)
	}
	leo, hw := part.FetchState().LogEnd, part.HighWatermark()
	if hw >= leo {
		t.Fatalf("HW %d at the log end %d before the followers fetched", hw, leo)
	}

	session := followerSession(t, tb, "fh", 12)
	fetch := func(offset int64) (*kmsg.FetchResponse, int64) {
		t.Helper()
		return session(offset, func(req *kmsg.FetchRequest) { req.ReplicaID = follower })
	}
	// The follower at the log end, the other behind it: the HW stays.
	if r, _ := fetch(leo); r.SessionID == 0 || fetchedCodes(r)[0].ErrorCode != 0 {
		t.Fatalf("full fetch at the log end: session %d, %v", r.SessionID, fetchedCodes(r))
	}
	if r, read := fetch(-1); len(fetchedCodes(r)) != 0 || read != 0 {
		t.Fatalf("incremental fetch with nothing new: partitions %v, %d read; want the partition quiet", fetchedCodes(r), read)
	}
	// The leader hears of the follower at hw (another session of it,
	// say), then of the other at the log end: the HW, held by the
	// follower, stays where the session's stamp has it.
	for _, f := range []struct {
		id     int32
		offset int64
	}{{follower, hw}, {other, leo}} {
		if err := part.UpdateFollowerFetch(f.id, -1, f.offset, 0); err != nil {
			t.Fatalf("follower %d fetch at %d: %v", f.id, f.offset, err)
		}
	}
	if got := part.HighWatermark(); got != hw {
		t.Fatalf("HW %d, want %d still", got, hw)
	}
	// The session's fetch, at the log end, moves the HW: the partition is
	// read and the follower told.
	r, read := fetch(-1)
	if got := part.HighWatermark(); got != leo {
		t.Fatalf("HW %d after the session's fetch at %d, want %d", got, leo, leo)
	}
	if p, ok := fetchedCodes(r)[0]; !ok || read != 1 || p.HighWatermark != leo {
		t.Fatalf("fetch that moved the HW: partition %v (sent: %v), %d read; want it read and sent with HW %d", p, ok, read, leo)
	}
}

// TestQuietLongPollUnwatches: a long-polling incremental fetch watches
// the quiet partitions it skipped and, once an append to one of them has
// it read that one, stops watching all of them, the one it read as well;
// the next fetch of the session (which reuses its list of quiet
// partitions) does the same.
func TestQuietLongPollUnwatches(t *testing.T) {
	const n = 4
	tb := startBroker(t, nil)
	tb.createTopic("fw", n, nil)
	offsets := map[int32]int64{}
	for p := range int32(n) {
		offsets[p] = 0
	}
	serve := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		rep, err := tb.b.handleFetch(context.Background(), &request{}, req)
		if err != nil || rep.wait != nil {
			t.Fatalf("fetch: %v (waits: %v)", err, rep.wait != nil)
		}
		return rep.resp.(*kmsg.FetchResponse)
	}
	full := serve(sessionFetch(12, 0, 0, "fw", offsets))
	if full.SessionID == 0 {
		t.Fatal("no session")
	}
	epoch := int32(0)
	watchers := func() []int {
		var w []int
		for p := range int32(n) {
			w = append(w, tb.leaderOf("fw", p).Watchers())
		}
		return w
	}
	for round, p := range []int32{1, 2} {
		epoch = nextFetchSessionEpoch(epoch)
		req := sessionFetch(12, full.SessionID, epoch, "", nil)
		req.MaxWaitMillis = 20_000
		before := tb.b.fetchSessions.partitionsRead.Load()
		rep, err := tb.b.handleFetch(context.Background(), &request{}, req)
		if err != nil || rep.wait == nil {
			t.Fatalf("round %d: fetch: %v (waits: %v)", round, err, rep.wait != nil)
		}
		if read := tb.b.fetchSessions.partitionsRead.Load() - before; read != 0 {
			t.Fatalf("round %d: %d partitions read, want all %d quiet", round, read, n)
		}
		if w := watchers(); slices.ContainsFunc(w, func(n int) bool { return n != 1 }) {
			t.Fatalf("round %d: watchers per partition %v while the fetch waits, want 1 each", round, w)
		}
		produceRaw(t, tb, "fw", p, -1, rawBatch(t, 1, 10, nil), nil)
		r := rep.wait().(*kmsg.FetchResponse)
		// The records are in the reply's regions, sent with sendfile.
		if got := fetchedCodes(r); r.ErrorCode != 0 || len(got) != 1 || got[p].HighWatermark != 1 || len(*rep.waitRegions) != 1 || (*rep.waitRegions)[0][0].Size == 0 {
			t.Fatalf("round %d: error %d, partitions %v; want only partition %d with its record", round, r.ErrorCode, got, p)
		}
		if w := watchers(); slices.ContainsFunc(w, func(n int) bool { return n != 0 }) {
			t.Fatalf("round %d: watchers per partition %v after the fetch, want none", round, w)
		}
		// The next fetch asks past the records it got, so that the
		// partition is quiet again.
		epoch = nextFetchSessionEpoch(epoch)
		next := sessionFetch(12, full.SessionID, epoch, "fw", map[int32]int64{p: 1})
		if r := serve(next); r.ErrorCode != 0 {
			t.Fatalf("round %d: fetch past the records: error %d", round, r.ErrorCode)
		}
	}
}

// addInSyncFollowers makes followers replicas of topic's partition 0, led
// by tb, all in the ISR, at the next leader epoch.
func addInSyncFollowers(t *testing.T, tb *testBroker, topic string, followers ...int32) {
	t.Helper()
	part := tb.leaderOf(topic, 0)
	st := part.State()
	lai := kmsg.NewPtrLeaderAndISRRequest()
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = topic, part.TopicID()
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Topic, ps.Leader, ps.LeaderEpoch, ps.ZKVersion = topic, st.Leader, st.LeaderEpoch+1, st.ZKVersion
	ps.Replicas = append([]int32{st.Leader}, followers...)
	ps.ISR = ps.Replicas
	ts.PartitionStates = append(ts.PartitionStates, ps)
	lai.TopicStates = append(lai.TopicStates, ts)
	if code := tb.b.replicas.ApplyLeaderAndISR(lai).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("LeaderAndISR: error %d", code)
	}
}

// followerSession returns a follower's Fetch of topic's partition 0 at
// version, in its session once it has one, naming the partition at offset
// when offset >= 0; name sets who fetches. It returns the answer and how
// many partitions the broker read for it.
func followerSession(t *testing.T, tb *testBroker, topic string, version int16) func(offset int64, name func(*kmsg.FetchRequest)) (*kmsg.FetchResponse, int64) {
	var sessionID, sessionEpoch int32
	return func(offset int64, name func(*kmsg.FetchRequest)) (*kmsg.FetchResponse, int64) {
		t.Helper()
		var parts map[int32]int64
		if offset >= 0 {
			parts = map[int32]int64{0: offset}
		}
		req := sessionFetch(version, sessionID, sessionEpoch, topic, parts)
		name(req)
		before := tb.b.fetchSessions.partitionsRead.Load()
		rep, err := tb.b.handleFetch(context.Background(), &request{}, req)
		if err != nil || rep.wait != nil {
			t.Fatalf("fetch: %v (waits: %v)", err, rep.wait != nil)
		}
		resp := rep.resp.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch: error %d", resp.ErrorCode)
		}
		sessionID, sessionEpoch = resp.SessionID, nextFetchSessionEpoch(sessionEpoch)
		return resp, tb.b.fetchSessions.partitionsRead.Load() - before
	}
}
