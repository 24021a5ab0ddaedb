package testutil

import (
	"regexp"
	"strings"
	"testing"
)

func TestKafkaToolVersion(t *testing.T) {
	stdout, stderr, err := KafkaTool(t, "kafka-topics.sh", "--version")
	if err != nil {
		t.Fatalf("kafka-topics.sh --version: %v\n%s", err, stderr)
	}
	if !regexp.MustCompile(`(?m)^\d+\.\d+\.\d+`).MatchString(stdout) {
		t.Errorf("kafka-topics.sh --version printed %q, want a version", stdout)
	}
}

func TestKafkaToolReportsFailure(t *testing.T) {
	_, stderr, err := KafkaTool(t, "kafka-topics.sh", "--no-such-option")
	if err == nil {
		t.Fatal("kafka-topics.sh with a bad option: err = nil")
	}
	if !strings.Contains(stderr, "no-such-option") {
		t.Errorf("stderr = %q, want the tool's complaint", stderr)
	}
}

func TestKcatVersion(t *testing.T) {
	stdout, stderr, err := Kcat(t, nil, "-V")
	if err != nil {
		t.Fatalf("kcat -V: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout+stderr, "librdkafka") {
		t.Errorf("kcat -V printed %q, want the librdkafka version", stdout+stderr)
	}
}
