package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaStopReplicaV4 is the start of a StopReplica v4 body as Kafka 3.9
// lays it out: ControllerId 1, isKRaftController false, ControllerEpoch 7,
// BrokerEpoch 42, then no topics (compact array of length 0) and no tags.
func kafkaStopReplicaV4() []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 1)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint64(b, 42)
	return append(b, 1, 0)
}

// A body in Kafka's order decodes to Kafka's values, and what Brook
// encodes is byte for byte what Kafka would write.
func TestStopReplicaV4KafkaOrder(t *testing.T) {
	body := kafkaStopReplicaV4()
	StopReplicaFromKafka(StopReplicaKey, 4, body)
	req := kmsg.NewPtrStopReplicaRequest()
	req.SetVersion(4)
	if err := req.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if req.ControllerID != 1 || req.ControllerEpoch != 7 || req.IsKRaftController || req.BrokerEpoch != 42 {
		t.Fatalf("decoded %+v, want controller 1, epoch 7, not KRaft, broker epoch 42", req)
	}

	enc := req.AppendTo(nil)
	StopReplicaToKafka(StopReplicaKey, 4, enc)
	if want := kafkaStopReplicaV4(); !bytes.Equal(enc, want) {
		t.Fatalf("encoded % x, want Kafka's % x", enc, want)
	}

	// Version 3 has no flag: nothing moves.
	v3 := kafkaStopReplicaV4()
	StopReplicaToKafka(StopReplicaKey, 3, v3)
	StopReplicaFromKafka(StopReplicaKey, 3, v3)
	if !bytes.Equal(v3, kafkaStopReplicaV4()) {
		t.Fatal("a v3 body was rewritten")
	}
}

func FuzzStopReplicaOrder(f *testing.F) {
	f.Add(kafkaStopReplicaV4())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		got := bytes.Clone(b)
		StopReplicaFromKafka(StopReplicaKey, 4, got)
		StopReplicaToKafka(StopReplicaKey, 4, got)
		if !bytes.Equal(got, b) {
			t.Fatalf("round trip % x -> % x", b, got)
		}
		req := kmsg.NewPtrStopReplicaRequest()
		req.SetVersion(4)
		StopReplicaFromKafka(StopReplicaKey, 4, got)
		_ = req.ReadFrom(got)
	})
}
