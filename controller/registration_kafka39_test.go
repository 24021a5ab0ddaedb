package controller

import (
	"encoding/json"
	"maps"
	"reflect"
	"testing"
)

// Registrations a Kafka 3.9.2 broker wrote in /brokers/ids (ZooKeeper
// mode, read back with zookeeper-shell): a plain one, and one with a rack
// and a second listener.
const (
	kafka39Registration     = `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://127.0.0.1:29091"],"jmx_port":-1,"port":29091,"host":"127.0.0.1","version":5,"timestamp":"1796137905221"}`
	kafka39RackRegistration = `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","INTERNAL":"PLAINTEXT"},"endpoints":["PLAINTEXT://127.0.0.1:29191","INTERNAL://127.0.0.1:29192"],"rack":"rack-a","jmx_port":-1,"port":29191,"host":"127.0.0.1","version":5,"timestamp":"1796138466066"}`
)

// TestRegistrationAsKafka39: Brook writes the same fields with the same
// values as Kafka 3.9 for the same broker, and reads Kafka's registration
// back into the same endpoints and rack.
func TestRegistrationAsKafka39(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kafka string
		ts    int64
		b     BrokerInfo
	}{
		{"plain", kafka39Registration, 1796137905221, BrokerInfo{ID: 1, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 29091, SecurityProtocol: "PLAINTEXT"}}}},
		{"rack and two listeners", kafka39RackRegistration, 1796138466066, BrokerInfo{ID: 4, Rack: "rack-a", Endpoints: []Endpoint{
			{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 29191, SecurityProtocol: "PLAINTEXT"},
			{Name: "INTERNAL", Host: "127.0.0.1", Port: 29192, SecurityProtocol: "PLAINTEXT"},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got map[string]any
			if err := json.Unmarshal([]byte(tc.kafka), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(encodeBroker(tc.b, tc.ts), &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range slicesUnion(maps.Keys(want), maps.Keys(got)) {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("%s: Brook writes %#v, Kafka 3.9 %#v", k, got[k], want[k])
				}
			}
			read, err := decodeBroker(tc.b.ID, []byte(tc.kafka))
			if err != nil {
				t.Fatalf("read Kafka's registration: %v", err)
			}
			if !reflect.DeepEqual(read, tc.b) {
				t.Errorf("read Kafka's registration as %+v, want %+v", read, tc.b)
			}
		})
	}
}

func slicesUnion(a, b func(func(string) bool)) []string {
	seen := map[string]bool{}
	var out []string
	for _, seq := range []func(func(string) bool){a, b} {
		for k := range seq {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}
