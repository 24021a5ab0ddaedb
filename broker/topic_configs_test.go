package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/internal/testutil"
)

// The log gets both halves of cleanup.policy: a compact,delete topic must
// still expire data by retention.ms and retention.bytes.
func TestLogConfigCleanupPolicy(t *testing.T) {
	cfg, _, err := config.FromMap(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		policy           string
		compact, deletes bool
	}{
		{"delete", false, true},
		{"", false, false},
		{"compact", true, false},
		{"compact,delete", true, true},
		{"delete,compact", true, true},
	}
	for _, tt := range tests {
		tc := newTopicConfigs(cfg)
		tc.set("t", map[string]string{"cleanup.policy": tt.policy})
		lc := tc.logConfig("t")
		if lc.Compact != tt.compact || lc.Delete != tt.deletes {
			t.Errorf("cleanup.policy=%s: log config Compact %v Delete %v, want %v %v", tt.policy, lc.Compact, lc.Delete, tt.compact, tt.deletes)
		}
	}
}

// segment.jitter.ms (and its broker synonym log.roll.jitter.ms) reaches
// the log, which draws each segment's jitter from it.
func TestLogConfigSegmentJitter(t *testing.T) {
	cfg, _, err := config.FromMap(map[string]string{"log.dirs": t.TempDir(), "log.roll.jitter.hours": "1"})
	if err != nil {
		t.Fatal(err)
	}
	tc := newTopicConfigs(cfg)
	tc.set("a", nil)
	tc.set("b", map[string]string{"segment.jitter.ms": "1234"})
	if got := tc.logConfig("a").SegmentJitterMs; got != 3600000 {
		t.Errorf("segment jitter from log.roll.jitter.hours=1: %d, want 3600000", got)
	}
	if got := tc.logConfig("b").SegmentJitterMs; got != 1234 {
		t.Errorf("segment jitter from the topic override: %d, want 1234", got)
	}
}

// producer.id.expiration.ms reaches the log manager at start-up and when it
// changes dynamically.
func TestProducerIDExpirationConfig(t *testing.T) {
	tb := startBroker(t, map[string]string{"producer.id.expiration.ms": "1000"})
	if got := tb.b.logs.ProducerIDExpiration(); got != time.Second {
		t.Fatalf("ProducerIDExpiration = %v, want the configured 1s", got)
	}
	ctx := testContext(t)
	v := "2000"
	res, err := tb.admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "producer.id.expiration.ms", Value: &v}})
	if err == nil {
		err = resourceErr(res.On("", nil))
	}
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := tb.b.logs.ProducerIDExpiration(); got != 2*time.Second {
			return fmt.Errorf("ProducerIDExpiration = %v after the dynamic update to 2s", got)
		}
		return nil
	})
}

// A compact,delete topic expires data by retention.ms like a delete topic
// (compaction itself is not built).
func TestCompactDeleteTopicRetention(t *testing.T) {
	tb := startBroker(t, map[string]string{"log.retention.check.interval.ms": "50"})
	for _, policy := range []string{"compact,delete", "delete,compact"} {
		topic := "cd-" + policy[:1]
		tb.createTopic(topic, 1, map[string]*string{
			"cleanup.policy": kadm.StringPtr(policy), "retention.ms": kadm.StringPtr("1"),
			"segment.bytes": kadm.StringPtr("1024"),
		})
		// Keyed batches of about 200 bytes: a few segments roll, and
		// every closed one is past retention.ms a millisecond later.
		for range 12 {
			if r := produceRaw(t, tb, topic, 0, -1, rawBatch(t, 1, 120, nil), nil); r.ErrorCode != 0 {
				t.Fatalf("produce: %+v", r)
			}
		}
		l := tb.b.replicas.Get(topic, 0).Log()
		testutil.Eventually(t, 30*time.Second, func() error {
			if start := l.LogStartOffset(); start == 0 {
				return fmt.Errorf("cleanup.policy=%s: log start offset still 0 over %d segments, all but the active one past retention.ms", policy, l.NumSegments())
			}
			return nil
		})
	}
}
