package controller

import (
	"reflect"
	"testing"

	"github.com/brook-mq/brook/controller/store"
)

// FuzzZnodeDecoders feeds arbitrary bytes to every znode decoder: none may
// panic, and whatever decodes must survive an encode/decode round trip.
func FuzzZnodeDecoders(f *testing.F) {
	seeds := [][]byte{
		nil, {}, []byte("{}"), []byte("null"), []byte("{not json"),
		encodeBroker(BrokerInfo{ID: 1, Rack: "r", Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "::1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}, 1),
		[]byte(`{"version":1,"host":"h","port":9092,"jmx_port":-1}`),
		[]byte(`{"version":4,"endpoints":["X://h:1"],"listener_security_protocol_map":{"X":"SSL"}}`),
		encodeTopic(TopicAssignment{TopicID: [16]byte{1}, Partitions: map[int32][]int32{0: {1, 2}}, Adding: map[int32][]int32{0: {3}}}),
		[]byte(`{"version":1,"partitions":{"-1":[1],"x":[2]}}`),
		encodePartitionState(PartitionState{Leader: 1, ISR: []int32{1}, LeaderRecoveryState: 1}),
		encodeConfig(map[string]string{"a": "b"}),
		[]byte(`{"version":1,"config":{"n":5,"s":"x"}}`),
		encodeConfigChange("topics/t"),
		[]byte(`{"version":1,"entity_type":"Topics","entity_name":"t"}`),
		encodeController(1, 2),
		[]byte("7"),
		encodeReassignment(map[TP][]int32{{"t", 0}: {1, 2}}),
		[]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]}]}`),
		[]byte(`{"version":1,"broker":3,"event":1}`),
		encodePartitionList([]TP{{"t", 0}, {"u", 3}}),
		[]byte(`{"features":{"metadata.version":{"max_version_level":21},"kraft.version":{"max_version_level":0}},"version":2,"status":1}`),
		[]byte(`{"features":{"f":{"min_version_level":1,"max_version_level":2}},"version":1,"status":0}`),
		EncodeFeatureZNode(FeatureZNode{Version: 2, Status: 1, Features: map[string]int16{"metadata.version": 21}}),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := decodeBroker(3, data); err == nil && len(b.Endpoints) > 0 {
			again, err := decodeBroker(3, encodeBroker(b, 0))
			if err != nil || !reflect.DeepEqual(again.Endpoints, b.Endpoints) || again.Rack != b.Rack {
				t.Fatalf("broker round trip: %+v -> %+v (%v)", b, again, err)
			}
		}
		if a, err := decodeTopic("t", data); err == nil {
			again, err := decodeTopic("t", encodeTopic(a))
			if err != nil || again.TopicID != a.TopicID || !sameAssignment(a.Partitions, again.Partitions) {
				t.Fatalf("topic round trip: %+v -> %+v (%v)", a, again, err)
			}
		}
		if ps, err := decodePartitionState(data, store.Stat{Version: 4}); err == nil {
			again, err := decodePartitionState(encodePartitionState(ps), store.Stat{Version: 4})
			if err != nil || again.Leader != ps.Leader || again.LeaderEpoch != ps.LeaderEpoch || len(again.ISR) != len(ps.ISR) || again.LeaderRecoveryState != ps.LeaderRecoveryState {
				t.Fatalf("state round trip: %+v -> %+v (%v)", ps, again, err)
			}
		}
		if cfg, err := decodeConfig(data); err == nil {
			again, err := decodeConfig(encodeConfig(cfg))
			if err != nil || !reflect.DeepEqual(again, cfg) {
				t.Fatalf("config round trip: %v -> %v (%v)", cfg, again, err)
			}
		}
		if m, err := decodeReassignment(data); err == nil {
			again, err := decodeReassignment(encodeReassignment(m))
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("reassignment round trip: %v -> %v (%v)", m, again, err)
			}
		}
		if tps, err := decodePartitionList(data); err == nil {
			again, err := decodePartitionList(encodePartitionList(tps))
			if err != nil || !reflect.DeepEqual(again, tps) {
				t.Fatalf("partition list round trip: %v -> %v (%v)", tps, again, err)
			}
		}
		if fz, err := DecodeFeatureZNode(data); err == nil {
			again, err := DecodeFeatureZNode(EncodeFeatureZNode(fz))
			if err != nil || !reflect.DeepEqual(again, fz) {
				t.Fatalf("feature znode round trip: %+v -> %+v (%v)", fz, again, err)
			}
		}
		_, _, _ = decodeLogDirEvent(data)
		_, _ = decodeConfigChange(data)
		_, _ = decodeController(data)
		_, _ = decodeControllerEpoch(data)
	})
}

// sameAssignment compares assignments, treating empty replica lists as
// absent (the encoder drops them, as Kafka's does).
func sameAssignment(a, b map[int32][]int32) bool {
	n := 0
	for p, r := range a {
		if len(r) == 0 {
			continue
		}
		n++
		if !reflect.DeepEqual(r, b[p]) {
			return false
		}
	}
	return n == len(b)
}
