package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/controller/store"
)

func testDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func plaintext(id int32) BrokerInfo {
	return BrokerInfo{ID: id, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}}}
}

// registerBrokers registers ids, each on its own session (as separate brokers).
func registerBrokers(t *testing.T, db *store.DB, ids ...int32) map[int32]*store.Session {
	t.Helper()
	out := map[int32]*store.Session{}
	for _, id := range ids {
		s := db.NewSession()
		if _, err := RegisterBroker(context.Background(), s, plaintext(id)); err != nil {
			t.Fatal(err)
		}
		out[id] = s
	}
	return out
}

func TestBrokerRegistrationJSON(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	s := db.NewSession()
	b := BrokerInfo{ID: 1, Rack: "r1", Endpoints: []Endpoint{
		{Name: "INTERNAL", Host: "::1", Port: 9093, SecurityProtocol: "SSL"},
		{Name: "CLIENT", Host: "h", Port: 9092, SecurityProtocol: "PLAINTEXT"},
	}}
	now := time.UnixMilli(1700000000123)
	epoch, err := RegisterBroker(ctx, s, b, WithNow(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	data, stat, err := s.Get(ctx, "/brokers/ids/1")
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner != s.SessionID() || stat.Czxid != epoch {
		t.Fatalf("stat %+v epoch %d", stat, epoch)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"features":                       map[string]any{},
		"listener_security_protocol_map": map[string]any{"INTERNAL": "SSL", "CLIENT": "PLAINTEXT"},
		"endpoints":                      []any{"INTERNAL://[::1]:9093", "CLIENT://h:9092"},
		"jmx_port":                       -1.0,
		"host":                           "h",
		"port":                           9092.0,
		"version":                        5.0,
		"timestamp":                      "1700000000123",
		"rack":                           "r1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("json\n got %v\nwant %v", got, want)
	}
	live, err := LiveBrokers(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	b.Epoch = epoch
	if len(live) != 1 || !reflect.DeepEqual(live[0], b) {
		t.Fatalf("round trip %+v, want %+v", live, b)
	}
}

func TestRegisterBrokerClash(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	first := db.NewSession()
	if _, err := RegisterBroker(ctx, first, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	// The same session may register again (a retried start-up step).
	if _, err := RegisterBroker(ctx, first, plaintext(1)); err != nil {
		t.Fatalf("re-register on own session: %v", err)
	}
	second := db.NewSession()
	if _, err := RegisterBroker(ctx, second, plaintext(1)); !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("clash: %v", err)
	}
	// Once the first broker's session is gone the id is free again, with a newer epoch.
	oldEpoch, _ := RegisterBroker(ctx, first, plaintext(1))
	first.Close()
	newEpoch, err := RegisterBroker(ctx, second, plaintext(1))
	if err != nil {
		t.Fatal(err)
	}
	if newEpoch <= oldEpoch {
		t.Fatalf("broker epoch did not grow: %d -> %d", oldEpoch, newEpoch)
	}
}

func TestEnsureClusterID(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	a, b := db.NewSession(), db.NewSession()
	id1, err := EnsureClusterID(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseUUID(id1); err != nil || len(id1) != 22 {
		t.Fatalf("cluster id %q: %v", id1, err)
	}
	id2, err := EnsureClusterID(ctx, b)
	if err != nil || id2 != id1 {
		t.Fatalf("second call: %q %v, want %q", id2, err, id1)
	}
	data, _, _ := a.Get(ctx, ClusterIDPath)
	if want := fmt.Sprintf(`{"version":"1","id":"%s"}`, id1); string(data) != want {
		t.Fatalf("json %s, want %s", data, want)
	}
}

func TestProducerIDBlocksUniqueUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	if err := EnsureTopLevelPaths(ctx, db.NewSession()); err != nil {
		t.Fatal(err)
	}
	const perBroker = 20
	type block struct{ start, end int64 }
	var mu sync.Mutex
	var blocks []block
	var wg sync.WaitGroup
	for b := range int32(2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := db.NewSession()
			for range perBroker {
				start, end, err := NextProducerIDBlock(ctx, s, b, ProducerIDBlockSize)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				blocks = append(blocks, block{start, end})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].start < blocks[j].start })
	if len(blocks) != 2*perBroker {
		t.Fatalf("%d blocks", len(blocks))
	}
	// Unique and contiguous: block i starts right after block i-1 ends.
	for i, bl := range blocks {
		if bl.start != int64(i)*ProducerIDBlockSize || bl.end != bl.start+ProducerIDBlockSize-1 {
			t.Fatalf("block %d = %+v", i, bl)
		}
	}
	data, _, _ := db.NewSession().Get(ctx, ProducerIDBlockPath)
	var j map[string]any
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if j["version"] != 1.0 || j["block_start"] != "39000" || j["block_end"] != "39999" {
		t.Fatalf("json %s", data)
	}
}

func TestAssignReplicasKafkaExample(t *testing.T) {
	// The example in Kafka's AdminUtils documentation: 5 brokers, 10
	// partitions, 3 replicas, start index 0 and no initial shift.
	got, err := AssignReplicas([]int32{0, 1, 2, 3, 4}, 10, 3, 0, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{
		0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1},
		5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// Property: random assignments always have rf distinct live replicas per
// partition, and leaders are balanced to within one across brokers.
func TestAssignReplicasProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := 1 + r.IntN(7)
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(i*3 + 1)
		}
		parts := int32(1 + r.IntN(40))
		rf := int16(1 + r.IntN(n))
		a, err := AssignReplicas(brokers, parts, rf, -1, -1, 0, r)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for p := range parts {
			reps := a[p]
			if len(reps) != int(rf) {
				t.Fatalf("partition %d: %v", p, reps)
			}
			seen := map[int32]bool{}
			for _, b := range reps {
				if seen[b] || b%3 != 1 || b > brokers[n-1] {
					t.Fatalf("partition %d: bad replicas %v", p, reps)
				}
				seen[b] = true
			}
			leaders[reps[0]]++
		}
		lo, hi := int(parts), 0
		for _, b := range brokers {
			lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
		}
		if hi-lo > 1 {
			t.Fatalf("unbalanced leaders %v", leaders)
		}
	}
}

func TestCreateTopicsValidation(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct {
		name     string
		spec     TopicSpec
		wantCode int16
		wantMsg  string // substring
		wantN    int32
		wantRF   int16
	}{
		{name: "defaults", spec: TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1}, wantN: 2, wantRF: 1},
		{name: "explicit", spec: TopicSpec{Name: "t", NumPartitions: 5, ReplicationFactor: 2}, wantN: 5, wantRF: 2},
		{name: "existing", spec: TopicSpec{Name: "exists", NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.TopicAlreadyExists.Code, wantMsg: "Topic 'exists' already exists."},
		{name: "marked for deletion", spec: TopicSpec{Name: "doomed", NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.TopicAlreadyExists.Code, wantMsg: "marked for deletion"},
		{name: "bad chars", spec: TopicSpec{Name: "a/b", NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.InvalidTopicException.Code, wantMsg: "illegal"},
		{name: "empty", spec: TopicSpec{Name: "", NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.InvalidTopicException.Code},
		{name: "dot", spec: TopicSpec{Name: ".", NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.InvalidTopicException.Code},
		{name: "dotdot", spec: TopicSpec{Name: "..", NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.InvalidTopicException.Code},
		{name: "too long", spec: TopicSpec{Name: long, NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.InvalidTopicException.Code, wantMsg: "249"},
		{name: "max length ok", spec: TopicSpec{Name: long[:249], NumPartitions: 1, ReplicationFactor: 1}, wantN: 1, wantRF: 1},
		{name: "collision", spec: TopicSpec{Name: "a_b", NumPartitions: 1, ReplicationFactor: 1}, wantCode: kerr.InvalidTopicException.Code, wantMsg: "collides with existing topics: a.b"},
		{name: "zero partitions", spec: TopicSpec{Name: "t", NumPartitions: 0, ReplicationFactor: 1}, wantCode: kerr.InvalidPartitions.Code},
		{name: "negative partitions", spec: TopicSpec{Name: "t", NumPartitions: -2, ReplicationFactor: 1}, wantCode: kerr.InvalidPartitions.Code},
		{name: "zero rf", spec: TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 0}, wantCode: kerr.InvalidReplicationFactor.Code},
		{name: "rf above brokers", spec: TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 4}, wantCode: kerr.InvalidReplicationFactor.Code, wantMsg: "larger than available brokers: 3"},
		{name: "both counts and assignment", spec: TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}}}, wantCode: kerr.InvalidRequest.Code},
		{name: "manual", spec: TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {3, 1}, 1: {1, 2}}}, wantN: 2, wantRF: 2},
		{name: "manual unequal rf", spec: TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {3, 1}, 1: {1}}}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "manual duplicate", spec: TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 1}}}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "manual gap", spec: TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}, 2: {2}}}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "partitions above the request limit", spec: TopicSpec{Name: "t", NumPartitions: math.MaxInt32, ReplicationFactor: 1}, wantCode: kerr.PolicyViolation.Code, wantMsg: TooManyPartitionsMessage},
		{name: "manual above the request limit", spec: TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: manualAssignment(MaxPartitionsPerRequest+1, 1)}, wantCode: kerr.PolicyViolation.Code},
		{name: "manual rf above int16", spec: TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: manualAssignment(1, math.MaxInt16+1)}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "huge rf", spec: TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: math.MaxInt16}, wantCode: kerr.InvalidReplicationFactor.Code},
		{name: "bad config", spec: TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"bad": "x"}}, wantCode: kerr.InvalidConfig.Code, wantMsg: "no such config bad"},
	}
	for _, tc := range tests {
		for _, validateOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/validateOnly=%v", tc.name, validateOnly), func(t *testing.T) {
				ctx := context.Background()
				db := testDB(t)
				registerBrokers(t, db, 1, 2, 3)
				s := db.NewSession()
				pre := CreateTopics(ctx, s, []TopicSpec{{Name: "exists", NumPartitions: 1, ReplicationFactor: 1}, {Name: "a.b", NumPartitions: 1, ReplicationFactor: 1}}, false)
				for _, r := range pre {
					if r.ErrorCode != 0 {
						t.Fatalf("setup: %+v", r)
					}
				}
				// A topic whose znodes the controller has removed but whose
				// deletion marker is still there.
				if err := store.EnsurePath(ctx, s, DeleteTopicPath("doomed")); err != nil {
					t.Fatal(err)
				}
				validator := func(topic string, cfg map[string]string) error {
					for k := range cfg {
						if k != "retention.ms" {
							return fmt.Errorf("no such config %s", k)
						}
					}
					return nil
				}
				res := CreateTopics(ctx, s, []TopicSpec{tc.spec}, validateOnly, WithDefaults(2, 1), WithConfigValidator(validator))
				r := res[0]
				if r.ErrorCode != tc.wantCode || !strings.Contains(r.ErrorMessage, tc.wantMsg) {
					t.Fatalf("result %+v, want code %d msg ~%q", r, tc.wantCode, tc.wantMsg)
				}
				ok, _, _ := s.Exists(ctx, TopicPath(tc.spec.Name))
				created := tc.wantCode == 0 && !validateOnly
				if tc.spec.Name != "exists" && tc.spec.Name != "doomed" && tc.spec.Name != "" && ok != created {
					t.Fatalf("topic node exists = %v, want %v", ok, created)
				}
				if tc.wantCode != 0 {
					if r.NumPartitions != -1 || r.ReplicationFactor != -1 {
						t.Fatalf("error result counts %+v", r)
					}
					return
				}
				if r.NumPartitions != tc.wantN || r.ReplicationFactor != tc.wantRF {
					t.Fatalf("counts %+v, want %d/%d", r, tc.wantN, tc.wantRF)
				}
				if validateOnly {
					return
				}
				a, err := ReadTopic(ctx, s, tc.spec.Name)
				if err != nil || a.TopicID != r.TopicID || int32(len(a.Partitions)) != tc.wantN {
					t.Fatalf("stored %+v %v (result id %x)", a, err, r.TopicID)
				}
				if tc.spec.Assignment != nil && !reflect.DeepEqual(a.Partitions, tc.spec.Assignment) {
					t.Fatalf("manual assignment not honoured: %v", a.Partitions)
				}
			})
		}
	}
}

func TestCreateTopicsDuplicatesInRequest(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	registerBrokers(t, db, 1)
	res := CreateTopics(ctx, db.NewSession(), []TopicSpec{
		{Name: "d", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "ok", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "d", NumPartitions: 2, ReplicationFactor: 1},
	}, false)
	if res[0].ErrorCode != kerr.InvalidRequest.Code || res[2].ErrorCode != kerr.InvalidRequest.Code || res[1].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestTopicZnodeJSON(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	registerBrokers(t, db, 1)
	s := db.NewSession()
	res := CreateTopics(ctx, s, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1}, 1: {1}}, Configs: map[string]string{"retention.ms": "1000"}}}, false)
	if res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	data, _, _ := s.Get(ctx, "/brokers/topics/t")
	want := fmt.Sprintf(`{"version":3,"partitions":{"0":[1],"1":[1]},"adding_replicas":{},"removing_replicas":{},"topic_id":"%s"}`, UUIDString(res[0].TopicID))
	if string(data) != want {
		t.Fatalf("topic json\n got %s\nwant %s", data, want)
	}
	cfg, _, _ := s.Get(ctx, "/config/topics/t")
	if string(cfg) != `{"version":1,"config":{"retention.ms":"1000"}}` {
		t.Fatalf("config json %s", cfg)
	}
}

func TestDeleteTopics(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	registerBrokers(t, db, 1)
	s := db.NewSession()
	created := CreateTopics(ctx, s, []TopicSpec{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}, {Name: "__consumer_offsets", NumPartitions: 1, ReplicationFactor: 1}}, false)
	res := DeleteTopics(ctx, s, []string{"t", "missing", "t", "__consumer_offsets"})
	wantCodes := []int16{0, kerr.UnknownTopicOrPartition.Code, 0, 0}
	for i, r := range res {
		if r.ErrorCode != wantCodes[i] {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if res[0].TopicID != created[0].TopicID {
		t.Fatalf("topic id %x, want %x", res[0].TopicID, created[0].TopicID)
	}
	if ok, _, _ := s.Exists(ctx, "/admin/delete_topics/t"); !ok {
		t.Fatal("deletion marker missing")
	}
}

func TestCreatePartitions(t *testing.T) {
	tests := []struct {
		name     string
		total    int32
		manual   [][]int32
		wantCode int16
		want     map[int32][]int32 // added partitions, when checked
	}{
		{name: "continue pattern", total: 5, want: map[int32][]int32{2: {3, 1}, 3: {1, 3}, 4: {2, 1}}},
		{name: "manual", total: 3, manual: [][]int32{{3, 2}}, want: map[int32][]int32{2: {3, 2}}},
		{name: "same count", total: 2, wantCode: kerr.InvalidPartitions.Code},
		{name: "decrease", total: 1, wantCode: kerr.InvalidPartitions.Code},
		{name: "manual wrong count", total: 4, manual: [][]int32{{1, 2}}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "manual unknown broker", total: 3, manual: [][]int32{{1, 9}}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "manual wrong rf", total: 3, manual: [][]int32{{1}}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "manual duplicate", total: 3, manual: [][]int32{{1, 1}}, wantCode: kerr.InvalidReplicaAssignment.Code},
		{name: "above the request limit", total: math.MaxInt32, wantCode: kerr.PolicyViolation.Code},
		{name: "manual rf above int16", total: 3, manual: [][]int32{manualAssignment(1, math.MaxInt16+1)[0]}, wantCode: kerr.InvalidReplicaAssignment.Code},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := testDB(t)
			registerBrokers(t, db, 1, 2, 3)
			s := db.NewSession()
			orig := map[int32][]int32{0: {1, 2}, 1: {2, 3}}
			if r := CreateTopics(ctx, s, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: orig}}, false); r[0].ErrorCode != 0 {
				t.Fatalf("%+v", r)
			}
			code, msg := CreatePartitions(ctx, s, "t", tc.total, tc.manual, false)
			if code != tc.wantCode {
				t.Fatalf("code %d (%s), want %d", code, msg, tc.wantCode)
			}
			a, _ := ReadTopic(ctx, s, "t")
			want := map[int32][]int32{0: {1, 2}, 1: {2, 3}}
			if code == 0 {
				for p, r := range tc.want {
					want[p] = r
				}
			}
			if !reflect.DeepEqual(a.Partitions, want) {
				t.Fatalf("assignment %v, want %v", a.Partitions, want)
			}
		})
	}
	ctx := context.Background()
	db := testDB(t)
	if code, _ := CreatePartitions(ctx, db.NewSession(), "none", 3, nil, false); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", code)
	}
}

func TestTopicConfigsAndWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := testDB(t)
	registerBrokers(t, db, 1)
	s := db.NewSession()
	CreateTopics(ctx, s, []TopicSpec{{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"a": "1"}}}, false)
	if err := SetTopicConfig(ctx, s, "missing", nil); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	if err := SetTopicConfig(ctx, s, "t", map[string]string{"a": "2"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan map[string]string, 10)
	done := make(chan error, 1)
	go func() {
		done <- WatchTopicConfigs(ctx, db.NewSession(), func(topic string, cfg map[string]string) {
			if topic == "t" {
				got <- cfg
			}
		})
	}()
	next := func() map[string]string {
		select {
		case c := <-got:
			return c
		case <-time.After(5 * time.Second):
			t.Fatal("no config change seen")
			return nil
		}
	}
	// The notification present at start is delivered first.
	if c := next(); !reflect.DeepEqual(c, map[string]string{"a": "2"}) {
		t.Fatalf("initial %v", c)
	}
	if err := SetTopicConfig(ctx, s, "t", map[string]string{"a": "3", "b": "x"}); err != nil {
		t.Fatal(err)
	}
	if c := next(); !reflect.DeepEqual(c, map[string]string{"a": "3", "b": "x"}) {
		t.Fatalf("after change %v", c)
	}
	kids, _, _ := s.Children(ctx, ConfigChangesPath)
	if !reflect.DeepEqual(kids, []string{"config_change_0000000000", "config_change_0000000001"}) {
		t.Fatalf("notifications %v", kids)
	}
	data, _, _ := s.Get(ctx, ConfigChangesPath+"/"+kids[1])
	if string(data) != `{"version":2,"entity_path":"topics/t"}` {
		t.Fatalf("notification json %s", data)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("watch ended with %v", err)
	}
}

func TestUUIDString(t *testing.T) {
	id := [16]byte{0xff, 0xfe, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	s := UUIDString(id)
	if s != "__4AAQIDBAUGBwgJCgsMDQ" {
		t.Fatalf("got %s", s)
	}
	back, err := ParseUUID(s)
	if err != nil || back != id {
		t.Fatalf("parse %x %v", back, err)
	}
	for range 1000 {
		u := RandomUUID()
		if u == ([16]byte{}) || UUIDString(u)[0] == '-' {
			t.Fatalf("bad random uuid %s", UUIDString(u))
		}
	}
}

// manualAssignment assigns partitions 0..n-1 to brokers 1..rf (unknown
// brokers are allowed in a CreateTopics assignment).
func manualAssignment(n, rf int) map[int32][]int32 {
	a := make(map[int32][]int32, n)
	for p := range int32(n) {
		reps := make([]int32, rf)
		for i := range reps {
			reps[i] = int32(i + 1)
		}
		a[p] = reps
	}
	return a
}

// TestAssignReplicasBounded checks that the assignment refuses, rather than
// allocates, a partition count above the per-request limit.
func TestAssignReplicasBounded(t *testing.T) {
	_, err := AssignReplicas([]int32{1, 2, 3}, math.MaxInt32, 1, 0, 0, 0, nil)
	var cerr *codeError
	if !errors.As(err, &cerr) || cerr.code != kerr.PolicyViolation.Code {
		t.Fatalf("AssignReplicas(2^31-1 partitions) = %v, want POLICY_VIOLATION", err)
	}
}
