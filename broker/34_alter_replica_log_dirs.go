package broker

// AlterReplicaLogDirs, key 34, versions 0-2.
//
// Moves replicas of this broker to another of its log dirs (Kafka's
// ReplicaManager.alterReplicaLogDirs): a future log fills in the
// destination and replaces the current one once it has caught up
// (log/future.go). A dir that is not in log.dirs is LOG_DIR_NOT_FOUND, a
// failed dir or replica KAFKA_STORAGE_ERROR; a partition without a replica
// here is REPLICA_NOT_AVAILABLE, and the dir is where its replica will be
// created (kafka-reassign-partitions sends the dirs before the replicas
// exist and retries). v2 is flexible.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, r *request, req *kmsg.AlterReplicaLogDirsRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	byTopic := map[string]int{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			i, ok := byTopic[t.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[t.Topic] = i
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode = moveErrorCode(b.logs.MoveReplica(log.TopicPartition{Topic: t.Topic, Partition: p}, d.Dir))
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			}
		}
	}
	return respond(resp)
}

// moveErrorCode maps a MoveReplica failure to Kafka's code.
func moveErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, log.ErrLogDirNotFound):
		return kerr.LogDirNotFound.Code
	case errors.Is(err, log.ErrNoReplica):
		return kerr.ReplicaNotAvailable.Code
	}
	return kerr.KafkaStorageError.Code
}
