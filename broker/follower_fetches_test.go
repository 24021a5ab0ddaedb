package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/replica"
)

// followerFetchesOf leads t-0 and t-1 (topic id id) on broker 1, with
// replicas {1,2} and ISR {1,2}, answered by a FollowerFetches.
func followerFetchesOf(t *testing.T, id [16]byte) (*replica.Manager, *FollowerFetches) {
	t.Helper()
	logs, err := log.OpenManager(log.ManagerConfig{Dirs: []string{t.TempDir()}, BrokerID: 1, ClusterID: "test"},
		func(log.TopicPartition) log.Config { return log.DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	rm := replica.NewManager(replica.Config{LocalID: 1, Logs: logs, ConfigFor: func(string) log.Config { return log.DefaultConfig() }})
	lai := kmsg.NewPtrLeaderAndISRRequest()
	lai.SetVersion(5)
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "t", id
	for p := range int32(2) {
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = "t", p, 1, 1, []int32{1, 2}, []int32{1, 2}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	lai.TopicStates = append(lai.TopicStates, ts)
	rm.ApplyLeaderAndISR(lai)
	ff := NewFollowerFetches(FollowerFetchesConfig{
		Replicas: rm, SessionSlots: 10, Now: time.Now, NewSessionID: func() int32 { return 7 },
		TopicName: func(got [16]byte) (string, bool) { return "t", got == id },
	})
	return rm, ff
}

// TestFollowerFetchesSessions: the broker-independent core answers a
// follower in a fetch session as the Fetch handler does: a full fetch
// gets a session, an incremental one in it carries only the partitions
// with something new, and a stale session epoch is refused.
func TestFollowerFetchesSessions(t *testing.T) {
	id := [16]byte{1}
	rm, ff := followerFetchesOf(t, id)
	produce := func(part int32) {
		b, err := batch.Build(batch.BuildOptions{BaseTimestamp: 1}, []batch.Record{{Value: []byte("v")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rm.Get("t", part).AppendAsLeader(b, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	fetch := func(sessionID, epoch int32, offsets map[int32]int64) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes, req.SessionID, req.SessionEpoch = 17, 1<<20, sessionID, epoch
		req.ReplicaState.ID, req.ReplicaState.Epoch = 2, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		for _, p := range []int32{0, 1} {
			if off, ok := offsets[p]; ok {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, off, 1, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		if len(rt.Partitions) > 0 {
			req.Topics = append(req.Topics, rt)
		}
		resp, err := ff.Serve(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	parts := func(resp *kmsg.FetchResponse) map[int32]int {
		out := map[int32]int{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = len(rp.RecordBatches)
			}
		}
		return out
	}
	produce(0)
	produce(1)
	full := fetch(0, 0, map[int32]int64{0: 0, 1: 0})
	if full.SessionID != 7 || len(parts(full)) != 2 || parts(full)[0] == 0 {
		t.Fatalf("full fetch: session %d, partitions %v; want session 7 and both partitions with records", full.SessionID, parts(full))
	}
	// Caught up on both: the answer says so (the HW moves) ...
	if got := parts(fetch(7, 1, map[int32]int64{0: 1, 1: 1})); len(got) != 2 {
		t.Fatalf("incremental fetch at the log ends: partitions %v, want both (their HW moved)", got)
	}
	// ... then nothing is new, and after an append to p1 only p1 is.
	if got := parts(fetch(7, 2, nil)); len(got) != 0 {
		t.Fatalf("incremental fetch with nothing new: partitions %v, want none", got)
	}
	produce(1)
	if got := parts(fetch(7, 3, nil)); len(got) != 1 || got[1] == 0 {
		t.Fatalf("incremental fetch after an append to p1: partitions %v, want p1 alone with records", got)
	}
	if resp := fetch(7, 3, nil); resp.ErrorCode == 0 {
		t.Fatal("a stale session epoch was served")
	}
}

// TestFollowerFetchBrokerEpoch: the leader takes a follower's broker
// epoch from Fetch v15+'s replica_state (KIP-903), so a fetch of an
// earlier incarnation than one it heard from is refused
// (NOT_LEADER_OR_FOLLOWER); before v15 there is none (-1) to check.
func TestFollowerFetchBrokerEpoch(t *testing.T) {
	id := [16]byte{1}
	_, ff := followerFetchesOf(t, id)
	fetch := func(version int16, brokerEpoch int64) int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes = version, 1<<20
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 2, brokerEpoch
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "t", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = 0, 1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := ff.Serve(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := fetch(17, 12); code != 0 {
		t.Fatalf("fetch at broker epoch 12: error %d", code)
	}
	if code := fetch(17, 11); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch at broker epoch 11 after 12: error %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
	if code := fetch(14, 11); code != 0 {
		t.Fatalf("v14 fetch, which carries no broker epoch: error %d", code)
	}
}
