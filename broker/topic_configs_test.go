package broker

import (
	"testing"

	"github.com/brook-mq/brook/config"
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

// The timestamp bounds reach the log, which is where appends check them.
func TestLogConfigTimestampBounds(t *testing.T) {
	cfg, _, err := config.FromMap(map[string]string{"log.dirs": t.TempDir(), "log.message.timestamp.after.max.ms": "3600000"})
	if err != nil {
		t.Fatal(err)
	}
	tc := newTopicConfigs(cfg)
	tc.set("t", map[string]string{"message.timestamp.before.max.ms": "60000"})
	lc := tc.logConfig("t")
	if lc.TimestampBeforeMaxMs != 60000 || lc.TimestampAfterMaxMs != 3600000 {
		t.Errorf("log config timestamp bounds before %d after %d, want 60000 and 3600000", lc.TimestampBeforeMaxMs, lc.TimestampAfterMaxMs)
	}
}
