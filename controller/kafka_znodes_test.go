package controller

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
)

// startedTopic runs a controller (broker 1) with brokers 1-3 live and a
// topic t whose partition 0 has replicas as given, and waits until its
// state is written.
func startedTopic(t *testing.T, replicas []int32) (*runningController, *fakeSender, *store.DB) {
	t.Helper()
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	registerBrokers(t, db, 2, 3)
	eventually(t, "controller active", f, rc.c.IsActive)
	if res := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: replicas}}}, false); res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	eventually(t, "partition started", f, func() bool { ok, _, _ := rc.sess.Exists(ctx, PartitionStatePath("t", 0)); return ok })
	return rc, f, db
}

func readState(t *testing.T, st Store, tp TP) PartitionState {
	t.Helper()
	data, stat, err := st.Get(context.Background(), PartitionStatePath(tp.Topic, tp.Partition))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := decodePartitionState(data, stat)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func childrenOf(t *testing.T, st Store, path string) []string {
	t.Helper()
	kids, _, err := st.Children(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return kids
}

// A Kafka broker below IBP 2.7 shrinks an ISR by writing the state znode
// itself and then /isr_change_notification/isr_change_<seq>: the
// controller takes the new state, tells every broker, and deletes the
// notification, as Kafka's controller does. A later controller write
// starts from the broker's version instead of failing on it.
func TestControllerIsrChangeNotification(t *testing.T) {
	ctx := context.Background()
	rc, f, _ := startedTopic(t, []int32{1, 2, 3})
	tp := TP{"t", 0}
	cur := readState(t, rc.sess, tp)
	shrunk := PartitionState{Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, ISR: []int32{1, 2}}
	if _, err := rc.sess.Set(ctx, PartitionStatePath("t", 0), encodePartitionState(shrunk), cur.ZkVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.sess.Create(ctx, IsrChangePath+"/"+IsrChangePrefix, encodePartitionList([]TP{tp}), store.Sequential); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "UpdateMetadata with the shrunk ISR to every broker", func(s []sentReq) bool {
		for _, b := range []int32{1, 2, 3} {
			um, ok := lastOf[*kmsg.UpdateMetadataRequest](s, b)
			if !ok || len(um.TopicStates) != 1 || !slices.Equal(um.TopicStates[0].PartitionStates[0].ISR, []int32{1, 2}) {
				return false
			}
		}
		return true
	})
	eventually(t, "notification deleted", f, func() bool { return len(childrenOf(t, rc.sess, IsrChangePath)) == 0 })

	// The controller's next write (ISR back to all three) is conditional
	// on the broker's version, and must succeed.
	st := readState(t, rc.sess, tp)
	resp, err := rc.c.AlterPartition(ctx, alterReq(1, st.Leader, -1, st.LeaderEpoch, st.ZkVersion, 1, 2, 3))
	if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartition after the broker's own write: %v %+v", err, resp)
	}
	if got := readState(t, rc.sess, tp); !slices.Equal(got.ISR, []int32{1, 2, 3}) {
		t.Fatalf("state after AlterPartition: %+v", got)
	}
}

// /admin/preferred_replica_election, written by older tools and
// AdminZkClient: present when the controller is elected, and written
// later; each time the preferred replicas take over and the znode is
// deleted.
func TestControllerZkPreferredElection(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	seed := db.NewSession()
	if err := EnsureTopLevelPaths(ctx, seed); err != nil {
		t.Fatal(err)
	}
	// Both brokers registered before the states were written and the
	// controller stands, as in a cluster: a broker registered after its
	// partition's state would be one that restarted since, which a new
	// controller takes out of the ISR.
	registerBrokers(t, db, 1, 2)
	// Two partitions led by their second replica, every replica in sync.
	a := TopicAssignment{Name: "t", TopicID: [16]byte{7}, Partitions: map[int32][]int32{0: {1, 2}, 1: {2, 1}}}
	if _, err := seed.Create(ctx, TopicPath("t"), encodeTopic(a), 0); err != nil {
		t.Fatal(err)
	}
	for p, leader := range map[int32]int32{0: 2, 1: 1} {
		for _, path := range []string{PartitionsPath("t"), PartitionPath("t", p)} {
			if _, err := seed.Create(ctx, path, nil, 0); err != nil && !errors.Is(err, store.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		if _, err := seed.Create(ctx, PartitionStatePath("t", p), encodePartitionState(PartitionState{Leader: leader, LeaderEpoch: 3, ISR: []int32{1, 2}}), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := seed.Create(ctx, PreferredReplicaElectionPath, encodePartitionList([]TP{{"t", 0}}), 0); err != nil {
		t.Fatal(err)
	}
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	eventually(t, "pending election done on taking over", f, func() bool {
		ok, _, _ := rc.sess.Exists(ctx, PreferredReplicaElectionPath)
		return !ok && readState(t, rc.sess, TP{"t", 0}).Leader == 1
	})
	if st := readState(t, rc.sess, TP{"t", 1}); st.Leader != 1 {
		t.Fatalf("partition 1 not named, yet its leader changed: %+v", st)
	}
	if _, err := rc.sess.Create(ctx, PreferredReplicaElectionPath, encodePartitionList([]TP{{"t", 1}, {"gone", 0}}), 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "election written later done", f, func() bool {
		ok, _, _ := rc.sess.Exists(ctx, PreferredReplicaElectionPath)
		return !ok && readState(t, rc.sess, TP{"t", 1}).Leader == 2
	})
	f.waitFor(t, "LeaderAndISR naming the preferred leader", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.LeaderAndISRRequest](s, 2)
		return ok && len(r.TopicStates) == 1 && r.TopicStates[0].PartitionStates[0].Partition == 1 && r.TopicStates[0].PartitionStates[0].Leader == 2
	})
}

// The controller sets /feature up on election as a Kafka 3.9 controller at
// IBP 3.9 does: created enabled and empty when absent (JSON version 2),
// enabled when disabled, and a node a Kafka controller finalized left
// byte for byte.
func TestControllerFeatureZNode(t *testing.T) {
	const kafka39 = `{"features":{"metadata.version":{"max_version_level":21},"group.version":{"max_version_level":1}},"version":2,"status":1}`
	for _, tc := range []struct {
		name, before, after string
	}{
		{"absent", "", `{"features":{},"version":2,"status":1}`},
		{"disabled", `{"features":{},"version":1,"status":0}`, `{"features":{},"version":2,"status":1}`},
		{"enabled by Kafka", kafka39, kafka39},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := testDB(t)
			seed := db.NewSession()
			var beforeVersion int32 = -1
			if tc.before != "" {
				if _, err := seed.Create(ctx, FeaturePath, []byte(tc.before), 0); err != nil {
					t.Fatal(err)
				}
				beforeVersion = 0
			}
			f := newFakeSender()
			rc := startController(t, db, 1, f, Config{})
			if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
				t.Fatal(err)
			}
			eventually(t, "controller active", f, rc.c.IsActive)
			f.waitFor(t, "UpdateMetadata (the election is through)", func(s []sentReq) bool { _, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1); return ok })
			data, stat, err := rc.sess.Get(ctx, FeaturePath)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tc.after {
				t.Fatalf("%s: %s, want %s", FeaturePath, data, tc.after)
			}
			if tc.before == tc.after && stat.Version != beforeVersion {
				t.Fatalf("%s rewritten (version %d) though it was already right", FeaturePath, stat.Version)
			}
		})
	}
	got, err := DecodeFeatureZNode([]byte(kafka39))
	if err != nil || !reflect.DeepEqual(got, FeatureZNode{Version: 2, Status: 1, Features: map[string]int16{"metadata.version": 21, "group.version": 1}}) {
		t.Fatalf("decode Kafka 3.9's node: %+v %v", got, err)
	}
	for _, bad := range []string{`{"features":{},"version":3,"status":1}`, `{"features":{},"version":2}`, `{"version":2,"status":1}`, `{"features":{"f":{"max_version_level":0}},"version":2,"status":1}`, `{"features":{"f":{"max_version_level":2}},"version":1,"status":1}`} {
		if _, err := DecodeFeatureZNode([]byte(bad)); err == nil {
			t.Errorf("decoded %s, which Kafka refuses", bad)
		}
	}
}

// A zombie controller (another controller bumped the epoch) must not
// consume the notifications and requests meant for the new one: its
// deletes are fenced by /controller_epoch's version, as Kafka's are.
func TestZombieControllerLeavesNotifications(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	s := db.NewSession()
	if _, err := RegisterBroker(ctx, s, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	c := New(Config{BrokerID: 1, DeleteTopicEnable: true}, s, newFakeSender())
	won, _, err := c.tryElect(ctx)
	if err != nil || !won {
		t.Fatalf("elect: %v %v", won, err)
	}
	c.state = NewClusterState(1, 1)
	c.channels = map[int32]brokerChannel{}
	c.deletions = map[string]*deletion{}
	if err := EnsureTopLevelPaths(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, IsrChangePath+"/"+IsrChangePrefix, encodePartitionList([]TP{{"t", 0}}), store.Sequential); err != nil {
		t.Fatal(err)
	}
	if err := NotifyLogDirFailure(ctx, s, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, PreferredReplicaElectionPath, encodePartitionList([]TP{{"t", 0}}), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, DeleteTopicPath("gone"), nil, 0); err != nil {
		t.Fatal(err)
	}
	// Another controller takes over.
	if _, err := s.Set(ctx, ControllerEpochPath, []byte("2"), store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(context.Context) error{
		"isr changes":        c.processIsrChanges,
		"log dir events":     c.processLogDirEvents,
		"preferred election": c.processZkPreferredElection,
		"topic deletions":    c.processDeletions,
	} {
		if err := f(ctx); !errors.Is(err, errLostControl) {
			t.Errorf("%s by a zombie controller: %v, want lost control", name, err)
		}
	}
	for _, path := range []string{IsrChangePath, LogDirEventPath, DeleteTopicsPath} {
		if kids := childrenOf(t, s, path); len(kids) != 1 {
			t.Errorf("%s: %v, want the notification left for the new controller", path, kids)
		}
	}
	if ok, _, _ := s.Exists(ctx, PreferredReplicaElectionPath); !ok {
		t.Errorf("%s deleted by a zombie controller", PreferredReplicaElectionPath)
	}
}

// A topic znode without topic_id (written by a tool or broker older than
// Kafka 2.8) gets one from the controller, as Kafka's controller assigns
// them at IBP 2.8+, and the brokers are told that id.
func TestControllerAssignsMissingTopicID(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	seed := db.NewSession()
	if err := EnsureTopLevelPaths(ctx, seed); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Create(ctx, TopicPath("old"), []byte(`{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}`), 0); err != nil {
		t.Fatal(err)
	}
	registerBrokers(t, db, 1)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	var id [16]byte
	eventually(t, "topic id written", f, func() bool {
		data, _, err := rc.sess.Get(ctx, TopicPath("old"))
		if err != nil {
			t.Fatal(err)
		}
		a, err := decodeTopic("old", data)
		if err != nil {
			t.Fatal(err)
		}
		id = a.TopicID
		return id != [16]byte{}
	})
	f.waitFor(t, "LeaderAndISR with the new topic id", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.LeaderAndISRRequest](s, 1)
		return ok && len(r.TopicStates) == 1 && r.TopicStates[0].Topic == "old" && r.TopicStates[0].TopicID == id
	})
}

// A broker that rewrites its registration (Kafka's updateBrokerInfo after
// a listener reconfiguration) is announced to every broker with its new
// endpoints, as Kafka's controller does on a BrokerModifications event.
func TestControllerBrokerModification(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	sessions := registerBrokers(t, db, 2)
	eventually(t, "controller active", f, rc.c.IsActive)
	f.waitFor(t, "UpdateMetadata listing broker 2", func(s []sentReq) bool {
		um, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1)
		return ok && len(um.LiveBrokers) == 2
	})
	moved := plaintext(2)
	moved.Endpoints[0].Port = 19999
	if _, err := sessions[2].Set(ctx, BrokerPath(2), encodeBroker(moved, 1), store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	for _, to := range []int32{1, 2} {
		f.waitFor(t, "UpdateMetadata with broker 2's new port", func(s []sentReq) bool {
			um, ok := lastOf[*kmsg.UpdateMetadataRequest](s, to)
			if !ok {
				return false
			}
			for _, b := range um.LiveBrokers {
				if b.ID == 2 && len(b.Endpoints) == 1 && b.Endpoints[0].Port == 19999 {
					return true
				}
			}
			return false
		})
	}
	// Twice: the watch is re-armed.
	moved.Endpoints[0].Port = 20001
	if _, err := sessions[2].Set(ctx, BrokerPath(2), encodeBroker(moved, 2), store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "UpdateMetadata with broker 2's second new port", func(s []sentReq) bool {
		um, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 1)
		return ok && slices.ContainsFunc(um.LiveBrokers, func(b kmsg.UpdateMetadataRequestLiveBroker) bool {
			return b.ID == 2 && len(b.Endpoints) == 1 && b.Endpoints[0].Port == 20001
		})
	})
}
