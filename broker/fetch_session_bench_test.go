package broker

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/replica"
)

// BenchmarkFetchIdlePartitions is the broker's work for one consumer fetch
// of 1,000 idle partitions (request decode, handler, response encode; no
// socket), sessionless (every fetch lists all 1,000) and in a session
// (incremental fetches that list none). cpu-ns/op is the process's CPU time
// per fetch, which a shared machine disturbs less than ns/op; req-bytes
// and resp-bytes are the sizes on the wire.
//
//	go test -run XXX -bench FetchIdlePartitions -benchmem ./broker
func BenchmarkFetchIdlePartitions(b *testing.B) {
	// Ten topics of 100 partitions: one CreateTopics of 1,000 partitions
	// outlasts its timeout on a loaded machine.
	const topics, perTopic, partitions = 10, 100, 1000
	tb := startBroker(b, nil)
	for i := range topics {
		tb.createTopic(fmt.Sprintf("idle-%d", i), perTopic, nil)
	}
	parts := map[int32]int64{}
	for p := range int32(perTopic) {
		parts[p] = 0
	}
	// fullFetch lists every partition of every topic.
	fullFetch := func(id, epoch int32) *kmsg.FetchRequest {
		req := sessionFetch(12, id, epoch, "idle-0", parts)
		for i := 1; i < topics; i++ {
			rt := req.Topics[0]
			rt.Topic = fmt.Sprintf("idle-%d", i)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	count := func(r *kmsg.FetchResponse) int {
		n := 0
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
		return n
	}
	ctx := context.Background()
	serve := func(b *testing.B, req *kmsg.FetchRequest) (*kmsg.FetchResponse, int, int) {
		wire := req.AppendTo(nil)
		dec := kmsg.NewPtrFetchRequest()
		dec.SetVersion(req.Version)
		if err := dec.ReadFrom(wire); err != nil {
			b.Fatal(err)
		}
		rep, err := tb.b.handleFetch(ctx, &request{}, dec)
		if err != nil || rep.wait != nil {
			b.Fatalf("fetch: %v (waits: %v)", err, rep.wait != nil)
		}
		resp := rep.resp.(*kmsg.FetchResponse)
		n := 0
		for _, c := range encodeFetch(nil, resp, rep.fetchRegions) {
			n += len(c.bytes) + int(c.region.Size)
		}
		return resp, len(wire), n
	}
	run := func(b *testing.B, next func() *kmsg.FetchRequest, check func(*kmsg.FetchResponse)) {
		var reqBytes, respBytes int
		start := cpuTime()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			resp, rq, rs := serve(b, next())
			check(resp)
			reqBytes, respBytes = rq, rs
		}
		b.StopTimer()
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(reqBytes), "req-bytes")
		b.ReportMetric(float64(respBytes), "resp-bytes")
	}
	b.Run("sessionless", func(b *testing.B) {
		req := fullFetch(0, -1)
		run(b, func() *kmsg.FetchRequest { return req }, func(r *kmsg.FetchResponse) {
			if count(r) != partitions {
				b.Fatalf("sessionless fetch: %d partitions", count(r))
			}
		})
	})
	b.Run("session", func(b *testing.B) {
		full, _, _ := serve(b, fullFetch(0, 0))
		if full.SessionID == 0 || count(full) != partitions {
			b.Fatalf("full fetch: session %d, %d partitions", full.SessionID, count(full))
		}
		epoch := int32(0)
		run(b, func() *kmsg.FetchRequest {
			epoch = nextFetchSessionEpoch(epoch)
			return sessionFetch(12, full.SessionID, epoch, "", nil)
		}, func(r *kmsg.FetchResponse) {
			if r.ErrorCode != 0 || len(r.Topics) != 0 {
				b.Fatalf("incremental fetch: error %d, %d topics", r.ErrorCode, len(r.Topics))
			}
		})
	})
}

// BenchmarkFetchOneChanged is the broker's work for one incremental
// fetch of a session of 1,000 partitions (10 topics of 100) after an
// append of one record to one of them (appended straight to the log, not
// counted), naming the partition of the fetch before at its new offset,
// as a consumer does. cpu-ns/op is the process's CPU time per fetch,
// appends included.
//
//	go test -run XXX -bench FetchOneChanged -benchmem ./broker
func BenchmarkFetchOneChanged(b *testing.B) {
	const topics, perTopic = 10, 100
	tb := startBroker(b, nil)
	parts := map[int32]int64{}
	for p := range int32(perTopic) {
		parts[p] = 0
	}
	full := sessionFetch(12, 0, 0, "one-0", parts)
	for i := range topics {
		tb.createTopic(fmt.Sprintf("one-%d", i), perTopic, nil)
		if i > 0 {
			rt := full.Topics[0]
			rt.Topic = fmt.Sprintf("one-%d", i)
			full.Topics = append(full.Topics, rt)
		}
	}
	var leaders [perTopic]*replica.Partition
	for p := range int32(perTopic) {
		leaders[p] = tb.leaderOf("one-0", p)
	}
	record := rawBatchB(b)
	serve := func(req *kmsg.FetchRequest) *kmsg.FetchResponse { return serveFetchB(b, tb, req) }
	first := serve(full)
	if first.SessionID == 0 {
		b.Fatal("no session")
	}
	offsets := make([]int64, perTopic)
	epoch, prev := int32(0), int32(-1)
	start := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := int32(i % perTopic)
		if _, err := leaders[p].AppendAsLeader(append([]byte(nil), record...), 1, 1); err != nil {
			b.Fatal(err)
		}
		epoch = nextFetchSessionEpoch(epoch)
		var named map[int32]int64
		if prev >= 0 {
			named = map[int32]int64{prev: offsets[prev]}
		}
		r := serve(sessionFetch(12, first.SessionID, epoch, "one-0", named))
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != p {
			b.Fatalf("incremental fetch after an append to partition %d: %v", p, fetchedPartitions(r))
		}
		offsets[p]++
		prev = p
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// serveFetchB serves req on tb's broker in process and returns the answer,
// which must not wait.
func serveFetchB(b *testing.B, tb *testBroker, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	rep, err := tb.b.handleFetch(context.Background(), &request{}, req)
	if err != nil || rep.wait != nil {
		b.Fatalf("fetch: %v (waits: %v)", err, rep.wait != nil)
	}
	return rep.resp.(*kmsg.FetchResponse)
}

// rawBatchB is one record of 10 bytes as a producer batch.
func rawBatchB(b *testing.B) []byte {
	rec, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()},
		[]batch.Record{{Key: []byte("k"), Value: make([]byte, 10)}}, batch.MustCodecs())
	if err != nil {
		b.Fatal(err)
	}
	return rec
}

// cpuTime is the CPU time, user and system, this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFollowerFetchIdlePartitions is the broker's work, as leader, for
// one follower's incremental fetch of 1,000 idle partitions in its session
// (Fetch v12, listing none), the follower's fetch of each recorded. The
// partitions are made to have replicas [0, 1] by a LeaderAndISR given
// straight to the replica manager (no broker 1 runs; replica 1 is the
// benchmark). partitions-read/op counts the partitions read per fetch:
// the quiet ones are skipped.
//
//	go test -run XXX -bench FollowerFetchIdlePartitions -benchmem ./broker
func BenchmarkFollowerFetchIdlePartitions(b *testing.B) {
	benchFollowerFetchIdle(b, 10, 100)
}

// BenchmarkFollowerFetchIdlePartitions16k is
// BenchmarkFollowerFetchIdlePartitions with a session of 16,000
// partitions (160 topics of 100), what each follower of a 3-broker
// cluster of 50,000 partitions at RF 3 has with each leader. Its setup
// creates 16,000 logs and takes about a minute.
//
//	go test -run XXX -bench FollowerFetchIdlePartitions16k -benchmem ./broker
func BenchmarkFollowerFetchIdlePartitions16k(b *testing.B) {
	benchFollowerFetchIdle(b, 160, 100)
}

// BenchmarkFollowerFullFetch16k is the leader's work for a follower's
// full fetch of 16,000 idle partitions, as a rejoining broker's first
// fetch to each leader of a 3-broker cluster of 50,000 partitions at RF 3:
// each iteration opens a new fetch session of all of them, records the
// follower's fetch of each and answers it. Its setup creates 16,000 logs
// and takes about a minute.
//
//	go test -run XXX -bench FollowerFullFetch16k -benchtime 10x -benchmem ./broker
func BenchmarkFollowerFullFetch16k(b *testing.B) {
	const topics, perTopic = 160, 100
	tb, full := followedBroker(b, topics, perTopic)
	start := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := serveFetchB(b, tb, full)
		if r.ErrorCode != 0 || r.SessionID == 0 || len(r.Topics) != topics {
			b.Fatalf("full follower fetch: error %d, session %d, %d topics", r.ErrorCode, r.SessionID, len(r.Topics))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkFollowerFetchIdlePartitionsLongPoll is
// BenchmarkFollowerFetchIdlePartitions with the follower's fetch waiting
// (max_wait_ms 500, an idle follower's normal fetch): the fetch also
// watches its quiet partitions, then ends (its context is done) and stops
// watching them.
//
//	go test -run XXX -bench FollowerFetchIdlePartitionsLongPoll -benchmem ./broker
func BenchmarkFollowerFetchIdlePartitionsLongPoll(b *testing.B) {
	benchFollowerFetchIdleWait(b, 10, 100, 500)
}

func benchFollowerFetchIdle(b *testing.B, topics int, perTopic int32) {
	benchFollowerFetchIdleWait(b, topics, perTopic, 0)
}

// benchFollowerFetchIdleWait is benchFollowerFetchIdle with the
// incremental fetches' max_wait_ms; a waiting fetch's context is done
// before it waits, so it ends at once.
func benchFollowerFetchIdleWait(b *testing.B, topics int, perTopic int32, maxWaitMs int32) {
	const follower = 1
	tb, full := followedBroker(b, topics, perTopic)
	serve := func(req *kmsg.FetchRequest) *kmsg.FetchResponse { return serveFetchB(b, tb, req) }
	done, cancel := context.WithCancel(context.Background())
	cancel()
	serveWait := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		if req.MaxWaitMillis == 0 {
			return serve(req)
		}
		rep, err := tb.b.handleFetch(done, &request{}, req)
		if err != nil || rep.wait == nil {
			b.Fatalf("fetch: %v (waits: %v)", err, rep.wait != nil)
		}
		return rep.wait().(*kmsg.FetchResponse)
	}
	first := serve(full)
	if first.SessionID == 0 || len(fetchedCodes(first)) == 0 {
		b.Fatalf("full follower fetch: session %d, %v", first.SessionID, first.Topics)
	}
	for _, t := range first.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("full follower fetch %s-%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	epoch := int32(0)
	read := tb.b.fetchSessions.partitionsRead.Load()
	start := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		epoch = nextFetchSessionEpoch(epoch)
		req := sessionFetch(12, first.SessionID, epoch, "", nil)
		req.ReplicaID = follower
		req.MaxWaitMillis = maxWaitMs
		if r := serveWait(req); r.ErrorCode != 0 || len(r.Topics) != 0 {
			b.Fatalf("incremental follower fetch: error %d, %d topics", r.ErrorCode, len(r.Topics))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(tb.b.fetchSessions.partitionsRead.Load()-read)/float64(b.N), "partitions-read/op")
	if _, followers, ok := tb.leaderOf("follow-0", 0).ReadReplicas(0); !ok || len(followers) != 1 {
		b.Fatalf("follower %d not in the ISR after its fetches: %v", follower, followers)
	}
}

// followedBroker is a broker leading topics of perTopic partitions each
// with replicas [0, 1] (by a LeaderAndISR given straight to its replica
// manager), and the full Fetch (v12) of all of them by follower 1.
func followedBroker(b *testing.B, topics int, perTopic int32) (*testBroker, *kmsg.FetchRequest) {
	const follower = 1
	tb := startBroker(b, nil)
	lair := kmsg.NewPtrLeaderAndISRRequest()
	parts := map[int32]int64{}
	for p := range int32(perTopic) {
		parts[p] = 0
	}
	full := sessionFetch(12, 0, 0, "follow-0", parts)
	full.ReplicaID = follower
	for i := range topics {
		name := fmt.Sprintf("follow-%d", i)
		tb.createTopic(name, perTopic, nil)
		if i > 0 {
			rt := full.Topics[0]
			rt.Topic = name
			full.Topics = append(full.Topics, rt)
		}
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic = name
		for p := range perTopic {
			part := tb.leaderOf(name, p)
			st := part.State()
			ts.TopicID = part.TopicID()
			ps := kmsg.NewLeaderAndISRRequestTopicPartition()
			ps.Topic, ps.Partition = name, p
			ps.Leader, ps.LeaderEpoch, ps.ZKVersion = 0, st.LeaderEpoch+1, st.ZKVersion
			ps.ISR, ps.Replicas = []int32{0, follower}, []int32{0, follower}
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		lair.TopicStates = append(lair.TopicStates, ts)
	}
	for _, t := range tb.b.replicas.ApplyLeaderAndISR(lair).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("LeaderAndISR %s-%d: error %d", p.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	return tb, full
}
