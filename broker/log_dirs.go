package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/log"
)

// onLogDirFailure is the log manager's OnDirFailure, Kafka's
// ReplicaManager.handleLogDirFailure: the replicas of the failed dir stop
// (clients get KAFKA_STORAGE_ERROR for them) and the controller is told
// through /log_dir_event_notification, so that leadership moves to other
// brokers. The other dirs keep serving.
func (b *Broker) onLogDirFailure(dir string, tps []log.TopicPartition) {
	b.logger.Error("log dir failed: its replicas are offline until restart", "dir", dir, "partitions", len(tps))
	if b.replicas != nil {
		b.replicas.MarkOffline(tps)
	}
	if left := len(b.cfg.LogDirs) - len(b.logs.OfflineDirs()); left == 0 {
		b.logger.Error("every log dir has failed; this broker hosts no replica until it restarts")
	}
	go b.notifyLogDirFailure()
}

// notifyLogDirFailure writes the notification, retrying while the store is
// unreachable: without it the controller would keep this broker's offline
// replicas as leaders.
func (b *Broker) notifyLogDirFailure() {
	for attempt := 0; attempt < 10; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := controller.NotifyLogDirFailure(ctx, b.store, b.cfg.BrokerID)
		cancel()
		if err == nil {
			return
		}
		b.logger.Warn("notify the controller of a log dir failure; retrying", "err", err)
		time.Sleep(time.Second)
	}
}

// offlineCode is KAFKA_STORAGE_ERROR for a partition whose log dir failed,
// else code.
func (b *Broker) offlineCode(topic string, partition int32, code int16) int16 {
	if code == kerr.NotLeaderForPartition.Code && b.logs.IsOffline(log.TopicPartition{Topic: topic, Partition: partition}) {
		return kerr.KafkaStorageError.Code
	}
	return code
}
