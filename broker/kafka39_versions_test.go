package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka39InterBroker lists the request versions a Kafka 3.9 broker and its
// ZooKeeper-mode controller send at inter.broker.protocol.version 3.9,
// without negotiating through ApiVersions (read from the 3.9.2 jars:
// MetadataVersion.fetchRequestVersion, listOffsetRequestVersion,
// offsetForLeaderEpochRequestVersion and writeTxnMarkersRequestVersion,
// AbstractControllerBrokerRequestBatch for the control requests, and
// KafkaServer.controlledShutdown). AlterPartition goes through a channel
// that negotiates; 3 is Kafka 3.9's newest, and so does AllocateProducerIds
// (Kafka 3.9 has only v0).
var kafka39InterBroker = map[int16]int16{
	1:  17, // Fetch, replica fetcher
	2:  9,  // ListOffsets, replica fetcher
	4:  7,  // LeaderAndIsr, controller
	5:  4,  // StopReplica, controller
	6:  8,  // UpdateMetadata, controller
	7:  3,  // ControlledShutdown, broker to controller
	23: 4,  // OffsetForLeaderEpoch, replica fetcher
	27: 1,  // WriteTxnMarkers, transaction coordinator
	56: 3,  // AlterPartition, broker to controller
	67: 0,  // AllocateProducerIds, broker to controller (IBP 3.0+)
}

// TestServesKafka39InterBrokerVersions: every version Kafka 3.9 sends is in
// Brook's ApiVersions table. Before, Fetch stopped at v16 and ListOffsets at
// v8, and Brook closed the Kafka replica fetcher's connection.
func TestServesKafka39InterBrokerVersions(t *testing.T) {
	tb := startBroker(t, nil)
	for key, v := range kafka39InterBroker {
		h, ok := tb.b.handlers[key]
		if !ok || v < h.min || v > h.max {
			t.Errorf("%s v%d (sent by Kafka 3.9) not served: table has %+v", kmsg.NameForKey(key), v, h)
		}
	}
}

// TestFetchV17FromKafkaFollower: a Kafka 3.9 follower's fetch, v17 with the
// topic id, replica_state and replica_directory_id, reads the records.
func TestFetchV17FromKafkaFollower(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("kafka39", 1, nil)
	cl := tb.client(kgo.DefaultProduceTopic("kafka39"))
	if err := cl.ProduceSync(testContext(t), &kgo.Record{Value: []byte("v17")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p := tb.b.replicas.Get("kafka39", 0)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(17)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = -1, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 1<<20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = p.TopicID()
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 1<<20, p.State().LeaderEpoch, -1
	fp.ReplicaDirectoryID = [16]byte{1, 2, 3}
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	got := tb.roundTrip(req).(*kmsg.FetchResponse)
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch v17 answered %+v", got)
	}
	part := got.Topics[0].Partitions[0]
	if part.ErrorCode != 0 || part.HighWatermark != 1 || len(part.RecordBatches) == 0 {
		t.Fatalf("Fetch v17: error %d, high watermark %d, %d record bytes; want 0, 1, a batch",
			part.ErrorCode, part.HighWatermark, len(part.RecordBatches))
	}
}

// TestListOffsetsV9LatestTiered: ListOffsets v9 adds -5, the latest tiered
// offset; without tiered storage Kafka 3.9 answers offset -1 and leader
// epoch -1 with no error, and -4 (earliest local) keeps the log start.
func TestListOffsetsV9LatestTiered(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("tiered", 1, nil)
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(9)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "tiered"
	for _, ts := range []int64{-5, -4} {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ps := tb.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions
	if tiered := ps[0]; tiered.ErrorCode != 0 || tiered.Offset != -1 || tiered.LeaderEpoch != -1 {
		t.Errorf("-5 = error %d, offset %d, epoch %d; want 0, -1, -1", tiered.ErrorCode, tiered.Offset, tiered.LeaderEpoch)
	}
	if local := ps[1]; local.ErrorCode != 0 || local.Offset != 0 || local.LeaderEpoch < 0 {
		t.Errorf("-4 = error %d, offset %d, epoch %d; want 0, 0, the leader epoch", local.ErrorCode, local.Offset, local.LeaderEpoch)
	}
}
