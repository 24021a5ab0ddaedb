package config

import (
	"strings"
	"testing"
)

func BenchmarkTopic(b *testing.B) {
	br, _, err := fromMap(map[string]string{"log.retention.hours": "24"}, fakeHost)
	if err != nil {
		b.Fatal(err)
	}
	overrides := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}
	for b.Loop() {
		if _, err := br.Topic(overrides); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTopicEntries(b *testing.B) {
	br, _, err := fromMap(nil, fakeHost)
	if err != nil {
		b.Fatal(err)
	}
	overrides := map[string]string{"retention.ms": "1000"}
	for b.Loop() {
		if len(br.TopicEntries(overrides)) == 0 {
			b.Fatal("no entries")
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	props := strings.Repeat("# comment\n", 20) + "broker.id=0\nlog.dirs=/tmp/a,/tmp/b\nlisteners=PLAINTEXT://127.0.0.1:9092\nnum.partitions=3\n"
	for b.Loop() {
		m, err := ParseProperties(strings.NewReader(props))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := fromMap(m, fakeHost); err != nil {
			b.Fatal(err)
		}
	}
}
