package config

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func entryByName(t *testing.T, es []ConfigEntry, name string) ConfigEntry {
	t.Helper()
	for _, e := range es {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return ConfigEntry{}
}

func TestTopicEntries(t *testing.T) {
	static := map[string]string{
		"log.segment.bytes":   "2048",
		"log.retention.ms":    "5000",
		"log.roll.hours":      "2",
		"compression.type":    "lz4",
		"min.insync.replicas": "2",
		"log.dirs":            "/data",
	}
	b := mustBroker(t, static)
	overrides := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact, delete"}
	entries := b.TopicEntries(overrides)

	tests := []struct {
		name     string
		value    string
		source   int8
		typ      Type
		synonyms []Synonym
	}{
		{"retention.ms", "1000", SourceTopic, Long, []Synonym{
			{Name: "retention.ms", Value: "1000", Source: SourceTopic},
			{Name: "log.retention.ms", Value: "5000", Source: SourceStaticBroker},
			{Name: "log.retention.hours", Value: "168", Source: SourceDefault},
		}},
		{"cleanup.policy", "compact,delete", SourceTopic, List, []Synonym{
			{Name: "cleanup.policy", Value: "compact,delete", Source: SourceTopic},
			{Name: "log.cleanup.policy", Value: "delete", Source: SourceDefault},
		}},
		{"segment.bytes", "2048", SourceStaticBroker, Int, []Synonym{
			{Name: "log.segment.bytes", Value: "2048", Source: SourceStaticBroker},
			{Name: "log.segment.bytes", Value: "1073741824", Source: SourceDefault},
		}},
		{"compression.type", "lz4", SourceStaticBroker, String, []Synonym{
			{Name: "compression.type", Value: "lz4", Source: SourceStaticBroker},
			{Name: "compression.type", Value: "producer", Source: SourceDefault},
		}},
		{"min.insync.replicas", "2", SourceStaticBroker, Int, []Synonym{
			{Name: "min.insync.replicas", Value: "2", Source: SourceStaticBroker},
			{Name: "min.insync.replicas", Value: "1", Source: SourceDefault},
		}},
		// Kafka keeps synonyms only from the first chain member on, so
		// log.roll.hours shows nowhere although it sets the value.
		{"segment.ms", "7200000", SourceDefault, Long, nil},
		// Likewise flush.ms: log.flush.interval.ms is null.
		{"flush.ms", "9223372036854775807", SourceDefault, Long, nil},
		{"max.message.bytes", "1048588", SourceDefault, Int, []Synonym{
			{Name: "message.max.bytes", Value: "1048588", Source: SourceDefault},
		}},
		{"min.cleanable.dirty.ratio", "0.5", SourceDefault, Double, []Synonym{
			{Name: "log.cleaner.min.cleanable.ratio", Value: "0.5", Source: SourceDefault},
		}},
		{"leader.replication.throttled.replicas", "", SourceDefault, List, nil},
		{"remote.storage.enable", "false", SourceDefault, Boolean, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := entryByName(t, entries, tt.name)
			if e.Value != tt.value || e.IsNull || e.Source != tt.source || e.Type != tt.typ {
				t.Errorf("entry = {value %q null %v source %d type %s}, want {value %q source %d type %s}",
					e.Value, e.IsNull, e.Source, e.Type, tt.value, tt.source, tt.typ)
			}
			if !reflect.DeepEqual(e.Synonyms, tt.synonyms) {
				t.Errorf("synonyms = %+v, want %+v", e.Synonyms, tt.synonyms)
			}
			if e.ReadOnly || e.Sensitive || e.Doc == "" {
				t.Errorf("flags: readOnly %v sensitive %v doc %q", e.ReadOnly, e.Sensitive, e.Doc)
			}
		})
	}

	// Every topic config is listed once, sorted, so tools see a full set.
	var want []string
	for _, d := range Defs() {
		if d.Scope == ScopeTopic {
			want = append(want, d.Name)
		}
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name)
	}
	if !reflect.DeepEqual(got, want) || !sort.StringsAreSorted(got) {
		t.Errorf("entry names = %v, want %v", got, want)
	}
}

func TestTopicEntriesMatchTopic(t *testing.T) {
	b := mustBroker(t, map[string]string{"log.retention.minutes": "10", "message.max.bytes": "5000"})
	overrides := map[string]string{"segment.bytes": "100000", "message.timestamp.type": "LogAppendTime"}
	topic, err := b.Topic(overrides)
	if err != nil {
		t.Fatal(err)
	}
	entries := b.TopicEntries(overrides)
	for name, got := range map[string]int64{
		"retention.ms":      topic.RetentionMs,
		"segment.bytes":     topic.SegmentBytes,
		"max.message.bytes": int64(topic.MaxMessageBytes),
	} {
		if e := entryByName(t, entries, name); e.Value != itoa(got) {
			t.Errorf("%s: entry %s, Topic %d", name, e.Value, got)
		}
	}
	if topic.RetentionMs != 600000 || topic.SegmentBytes != 100000 || topic.MaxMessageBytes != 5000 || !topic.LogAppendTime {
		t.Errorf("Topic = %+v", topic)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestBrokerEntries(t *testing.T) {
	b := mustBroker(t, map[string]string{
		"log.retention.hours":             "24",
		"zookeeper.ssl.keystore.password": "s3cret",
		"listeners":                       "PLAINTEXT://127.0.0.1:9092",
	})
	entries := b.BrokerEntries()
	for _, e := range entries {
		if strings.Contains(e.Value, "s3cret") {
			t.Fatalf("entry %s leaks the password", e.Name)
		}
		for _, s := range e.Synonyms {
			if strings.Contains(s.Value, "s3cret") {
				t.Fatalf("synonym of %s leaks the password", e.Name)
			}
		}
	}
	tests := []struct {
		name      string
		value     string
		isNull    bool
		source    int8
		readOnly  bool
		sensitive bool
		synonyms  []Synonym
	}{
		{"log.retention.hours", "24", false, SourceStaticBroker, true, false, []Synonym{
			{Name: "log.retention.hours", Value: "24", Source: SourceStaticBroker},
			{Name: "log.retention.hours", Value: "168", Source: SourceDefault},
		}},
		{"log.retention.ms", "", true, SourceDefault, false, false, nil},
		{"num.partitions", "1", false, SourceDefault, true, false, []Synonym{
			{Name: "num.partitions", Value: "1", Source: SourceDefault},
		}},
		{"listeners", "PLAINTEXT://127.0.0.1:9092", false, SourceStaticBroker, false, false, []Synonym{
			{Name: "listeners", Value: "PLAINTEXT://127.0.0.1:9092", Source: SourceStaticBroker},
			{Name: "listeners", Value: "PLAINTEXT://:9092", Source: SourceDefault},
		}},
		{"zookeeper.ssl.keystore.password", "", true, SourceStaticBroker, true, true, []Synonym{
			{Name: "zookeeper.ssl.keystore.password", IsNull: true, Source: SourceStaticBroker},
		}},
		{"broker.rack", "", true, SourceDefault, true, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := entryByName(t, entries, tt.name)
			if e.Value != tt.value || e.IsNull != tt.isNull || e.Source != tt.source || e.ReadOnly != tt.readOnly || e.Sensitive != tt.sensitive {
				t.Errorf("entry = %+v", e)
			}
			if !reflect.DeepEqual(e.Synonyms, tt.synonyms) {
				t.Errorf("synonyms = %+v, want %+v", e.Synonyms, tt.synonyms)
			}
		})
	}
	n := 0
	for _, d := range Defs() {
		if d.Scope == ScopeBroker {
			n++
		}
	}
	if len(entries) != n {
		t.Errorf("%d broker entries, want %d", len(entries), n)
	}
}

func TestEntriesNamed(t *testing.T) {
	b := mustBroker(t, nil)
	all := b.TopicEntries(nil)
	if got := EntriesNamed(all, nil); len(got) != len(all) {
		t.Errorf("nil names kept %d of %d", len(got), len(all))
	}
	got := EntriesNamed(all, []string{"segment.ms", "retention.ms", "nope"})
	if len(got) != 2 || got[0].Name != "retention.ms" || got[1].Name != "segment.ms" {
		t.Errorf("EntriesNamed = %+v", got)
	}
}
