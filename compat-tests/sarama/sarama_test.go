package sarama_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// versions are the config Versions every scenario runs with.
var versions = []struct {
	name    string
	version sarama.KafkaVersion
}{
	{"default", sarama.NewConfig().Version},
	{"max", sarama.MaxVersion},
}

// newConfig is sarama's default config at version, with a client id that
// names the test in Brook's log and short retry backoffs for a local broker.
func newConfig(t *testing.T, version sarama.KafkaVersion) *sarama.Config {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "brook-compat-sarama"
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatalf("sarama config: %v", err)
	}
	return cfg
}

// TestSarama runs every scenario under each config Version, each against a
// broker of its own.
func TestSarama(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string, version sarama.KafkaVersion)
	}{
		{"ClusterAdmin", testClusterAdmin},
		{"SyncProducer", testSyncProducer},
		{"AsyncProducerCompression", testAsyncProducerCompression},
		{"ConsumerGroup", testConsumerGroup},
	}
	for _, v := range versions {
		t.Run(fmt.Sprintf("%s-%s", v.name, v.version), func(t *testing.T) {
			for _, s := range scenarios {
				t.Run(s.name, func(t *testing.T) {
					b := startBrook(t)
					s.run(t, b.addr, v.version)
				})
			}
		})
	}
}

// newAdmin is a ClusterAdmin closed at the end of the test.
func newAdmin(t *testing.T, addr string, version sarama.KafkaVersion) sarama.ClusterAdmin {
	t.Helper()
	admin, err := sarama.NewClusterAdmin([]string{addr}, newConfig(t, version))
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

// createTopic creates a topic with sarama's admin and waits until its
// metadata shows every partition with a leader.
func createTopic(t *testing.T, admin sarama.ClusterAdmin, topic string, partitions int32) {
	t.Helper()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	eventually(t, 30*time.Second, func() error {
		md, err := admin.DescribeTopics([]string{topic})
		if err != nil {
			return err
		}
		if len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != int(partitions) {
			return fmt.Errorf("DescribeTopics %s: %+v", topic, md)
		}
		return nil
	})
}
