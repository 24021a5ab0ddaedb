package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTableConsistent(t *testing.T) {
	defs := Defs()
	seen := map[Scope]map[string]bool{ScopeBroker: {}, ScopeTopic: {}}
	for _, d := range defs {
		if seen[d.Scope][d.Name] {
			t.Errorf("%s %s defined twice", d.Scope, d.Name)
		}
		seen[d.Scope][d.Name] = true
		if d.Doc == "" {
			t.Errorf("%s has no doc", d.Name)
		}
		if d.HasDefault {
			if _, err := d.parse(d.Default); err != nil {
				t.Errorf("%s: default %q is invalid: %v", d.Name, d.Default, err)
			} else if c, _ := canonical(d.Type, d.Default); c != d.Default {
				t.Errorf("%s: default %q is not canonical (%q)", d.Name, d.Default, c)
			}
		}
		if (d.Validate == nil) != (d.ValidValues == "") {
			t.Errorf("%s: validator and its description disagree", d.Name)
		}
		if d.Sensitive != (d.Type == Password) {
			t.Errorf("%s: sensitive %v for type %s", d.Name, d.Sensitive, d.Type)
		}
		if d.Scope == ScopeTopic && (d.ReadOnly || d.Update != ReadOnly) {
			t.Errorf("topic config %s has a broker update mode", d.Name)
		}
		if d.Scope == ScopeBroker && d.ReadOnly != (d.Update == ReadOnly) {
			t.Errorf("%s: ReadOnly %v with update mode %s", d.Name, d.ReadOnly, d.Update)
		}
	}
	// Every topic synonym is a broker config of the same type, and its
	// default agrees with the topic default (hour-based ones converted).
	b := mustBroker(t, nil)
	for _, d := range defs {
		if d.Scope != ScopeTopic || d.Synonym == "" {
			continue
		}
		if !seen[ScopeBroker][d.Synonym] {
			t.Errorf("topic config %s: synonym %s is not a broker config", d.Name, d.Synonym)
			continue
		}
		if got := b.TopicValue(nil, d.Name); got != d.Default {
			t.Errorf("topic config %s: broker default %q, topic default %q", d.Name, got, d.Default)
		}
	}
	// Fresh slices: changing one does not change the next.
	defs[0].Name = "mutated"
	if Defs()[0].Name == "mutated" {
		t.Error("Defs returns shared state")
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	good := []map[string]string{
		nil,
		{"cleanup.policy": "compact"},
		{"cleanup.policy": "compact,delete"},
		{"cleanup.policy": ""},
		{"retention.ms": "-1", "retention.bytes": "-1"},
		{"segment.bytes": "14"},
		{"max.message.bytes": "0"},
		{"min.cleanable.dirty.ratio": "0.01"},
		{"message.timestamp.type": "LogAppendTime"},
		{"compression.type": "zstd", "compression.zstd.level": "-5"},
		{"leader.replication.throttled.replicas": "*"},
		{"follower.replication.throttled.replicas": "0:1,1:2"},
		{"unclean.leader.election.enable": "TRUE"},
		{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "10"},
		{"message.format.version": "2.8-IV1"},
		{"remote.storage.enable": "false"},
	}
	for _, m := range good {
		if err := ValidateTopicConfigs(m); err != nil {
			t.Errorf("ValidateTopicConfigs(%v) = %v", m, err)
		}
	}
	bad := []struct {
		m       map[string]string
		key     string
		unknown bool
	}{
		{map[string]string{"retention.hours": "1"}, "retention.hours", true},
		{map[string]string{"log.retention.ms": "1"}, "log.retention.ms", true},
		{map[string]string{"segment.bytes": "13"}, "segment.bytes", false},
		{map[string]string{"segment.ms": "0"}, "segment.ms", false},
		{map[string]string{"retention.ms": "-2"}, "retention.ms", false},
		{map[string]string{"retention.ms": "1h"}, "retention.ms", false},
		{map[string]string{"cleanup.policy": "compact,archive"}, "cleanup.policy", false},
		{map[string]string{"compression.type": "none"}, "compression.type", false},
		{map[string]string{"min.insync.replicas": "0"}, "min.insync.replicas", false},
		{map[string]string{"min.cleanable.dirty.ratio": "1.01"}, "min.cleanable.dirty.ratio", false},
		{map[string]string{"message.timestamp.type": "Now"}, "message.timestamp.type", false},
		{map[string]string{"preallocate": "maybe"}, "preallocate", false},
		{map[string]string{"segment.index.bytes": "3"}, "segment.index.bytes", false},
		{map[string]string{"max.compaction.lag.ms": "0"}, "max.compaction.lag.ms", false},
		{map[string]string{"leader.replication.throttled.replicas": "a:b"}, "leader.replication.throttled.replicas", false},
		{map[string]string{"follower.replication.throttled.replicas": "*,0:1"}, "follower.replication.throttled.replicas", false},
		{map[string]string{"remote.storage.enable": "true"}, "remote.storage.enable", false},
		{map[string]string{"min.compaction.lag.ms": "11", "max.compaction.lag.ms": "10"}, "min.compaction.lag.ms", false},
		{map[string]string{"max.message.bytes": "2147483648"}, "max.message.bytes", false},
	}
	for _, tt := range bad {
		err := ValidateTopicConfigs(tt.m)
		if err == nil {
			t.Errorf("ValidateTopicConfigs(%v) accepted", tt.m)
			continue
		}
		if !strings.Contains(err.Error(), tt.key) {
			t.Errorf("error %q does not name %s", err, tt.key)
		}
		want := ErrInvalidValue
		if tt.unknown {
			want = ErrUnknownConfig
		}
		if !errors.Is(err, want) {
			t.Errorf("error %v is not %v", err, want)
		}
	}
}

func TestTopicOverridesAndBrokerDefaults(t *testing.T) {
	b := mustBroker(t, map[string]string{"log.cleaner.min.compaction.lag.ms": "100"})
	// A topic whose override conflicts with the broker default fails.
	if _, err := b.Topic(map[string]string{"max.compaction.lag.ms": "50"}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("Topic with min lag 100 > max lag 50: err = %v", err)
	}
	if err := b.ValidateTopic(map[string]string{"max.compaction.lag.ms": "50"}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("ValidateTopic with min lag 100 > max lag 50: err = %v", err)
	}
	if err := b.ValidateTopic(map[string]string{"max.compaction.lag.ms": "100"}); err != nil {
		t.Errorf("ValidateTopic: %v", err)
	}
	if err := b.ValidateTopic(map[string]string{"x.y": "z"}); !errors.Is(err, ErrUnknownConfig) {
		t.Errorf("ValidateTopic with unknown name: err = %v", err)
	}
	// Unknown names are ignored, bad values are not.
	if _, err := b.Topic(map[string]string{"x.y": "z"}); err != nil {
		t.Errorf("unknown override: %v", err)
	}
	if _, err := b.Topic(map[string]string{"segment.bytes": "x"}); err == nil {
		t.Error("bad override accepted")
	}
	tp, err := b.Topic(map[string]string{
		"cleanup.policy":                      "compact",
		"message.timestamp.difference.max.ms": "1000",
		"message.timestamp.after.max.ms":      "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tp.Compact || tp.Delete || tp.MinCompactionLagMs != 100 {
		t.Errorf("Topic = %+v", tp)
	}
	// The deprecated difference stands in only for a bound left at its default.
	if tp.MessageTimestampBeforeMaxMs != 1000 || tp.MessageTimestampAfterMaxMs != 5 {
		t.Errorf("timestamp bounds before %d after %d, want 1000 and 5", tp.MessageTimestampBeforeMaxMs, tp.MessageTimestampAfterMaxMs)
	}
}

// TestTimestampBoundsPrecedence follows Kafka 3.9 (KIP-937): a bound is
// the topic's own if set, else the broker's effective bound, which is
// log.message.timestamp.{before,after}.max.ms if set, else the broker's
// log.message.timestamp.difference.max.ms; only when all of these are at
// their default does the topic's deprecated difference stand in.
func TestTimestampBoundsPrecedence(t *testing.T) {
	const unset = int64(9223372036854775807)
	cases := []struct {
		name          string
		broker, topic map[string]string
		before, after int64
	}{
		{"defaults", nil, nil, unset, unset},
		{"broker bounds", map[string]string{"log.message.timestamp.before.max.ms": "10", "log.message.timestamp.after.max.ms": "20"}, nil, 10, 20},
		{"broker difference", map[string]string{"log.message.timestamp.difference.max.ms": "30"}, nil, 30, 30},
		{"broker bound beats broker difference", map[string]string{"log.message.timestamp.difference.max.ms": "30", "log.message.timestamp.before.max.ms": "10"}, nil, 10, 30},
		{"broker difference beats topic difference", map[string]string{"log.message.timestamp.difference.max.ms": "30"},
			map[string]string{"message.timestamp.difference.max.ms": "40"}, 30, 30},
		{"topic bound beats broker difference", map[string]string{"log.message.timestamp.difference.max.ms": "30"},
			map[string]string{"message.timestamp.after.max.ms": "50"}, 30, 50},
		{"topic difference", nil, map[string]string{"message.timestamp.difference.max.ms": "40"}, 40, 40},
	}
	for _, tc := range cases {
		tp, err := mustBroker(t, tc.broker).Topic(tc.topic)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tp.MessageTimestampBeforeMaxMs != tc.before || tp.MessageTimestampAfterMaxMs != tc.after {
			t.Errorf("%s: before %d after %d, want %d and %d", tc.name, tp.MessageTimestampBeforeMaxMs, tp.MessageTimestampAfterMaxMs, tc.before, tc.after)
		}
	}
}

// docs/configuration.md must be what cmd/brook-configdoc generates now.
func TestDocsUpToDate(t *testing.T) {
	path := filepath.Join("..", DocPath)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if want := Markdown(); !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run `go run ./cmd/brook-configdoc` from the module root", DocPath)
	}
	md := string(Markdown())
	for _, d := range Defs() {
		if !strings.Contains(md, "### `"+d.Name+"`") {
			t.Errorf("docs miss %s", d.Name)
		}
	}
}
