package config

import (
	"errors"
	"reflect"
	"testing"
)

func TestWithDynamic(t *testing.T) {
	static := mustBroker(t, map[string]string{"log.retention.ms": "300", "min.insync.replicas": "1"})
	b, err := static.WithDynamic(
		map[string]string{"log.retention.ms": "100", "listeners": "PLAINTEXT://127.0.0.1:9999"},
		map[string]string{"log.retention.ms": "200", "min.insync.replicas": "2"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.TopicValue(nil, "retention.ms"); got != "100" {
		t.Errorf("retention.ms = %s, want the per-broker 100", got)
	}
	if got := static.TopicValue(nil, "retention.ms"); got != "300" {
		t.Errorf("static broker changed: retention.ms = %s", got)
	}
	if b.MinInSyncReplicas != 2 || static.MinInSyncReplicas != 1 {
		t.Errorf("MinInSyncReplicas dynamic %d static %d", b.MinInSyncReplicas, static.MinInSyncReplicas)
	}
	if want := []Listener{{"PLAINTEXT", "127.0.0.1", 9999}}; !reflect.DeepEqual(b.AdvertisedListeners, want) {
		t.Errorf("AdvertisedListeners = %v", b.AdvertisedListeners)
	}

	e := entryByName(t, b.TopicEntries(nil), "retention.ms")
	wantSyn := []Synonym{
		{Name: "log.retention.ms", Value: "100", Source: SourceDynamicBroker},
		{Name: "log.retention.ms", Value: "200", Source: SourceDynamicDefault},
		{Name: "log.retention.ms", Value: "300", Source: SourceStaticBroker},
		{Name: "log.retention.hours", Value: "168", Source: SourceDefault},
	}
	if e.Source != SourceDynamicBroker || !reflect.DeepEqual(e.Synonyms, wantSyn) {
		t.Errorf("retention.ms entry source %d synonyms %+v", e.Source, e.Synonyms)
	}
	e = entryByName(t, b.BrokerEntries(), "min.insync.replicas")
	if e.Value != "2" || e.Source != SourceDynamicDefault || e.ReadOnly {
		t.Errorf("min.insync.replicas broker entry %+v", e)
	}

	defaults := b.BrokerDefaultEntries()
	if len(defaults) != 2 || defaults[0].Name != "log.retention.ms" || defaults[1].Name != "min.insync.replicas" {
		t.Fatalf("BrokerDefaultEntries = %+v", defaults)
	}
	want := []Synonym{{Name: "log.retention.ms", Value: "200", Source: SourceDynamicDefault}}
	if defaults[0].Value != "200" || !reflect.DeepEqual(defaults[0].Synonyms, want) {
		t.Errorf("default entry %+v", defaults[0])
	}
}

func TestDynamicUpdateRules(t *testing.T) {
	b := mustBroker(t, nil)
	tests := []struct {
		name                  string
		perBroker, clusterDef map[string]string
		want                  error
	}{
		{"read-only per broker", map[string]string{"broker.id": "3"}, nil, ErrReadOnly},
		{"read-only hours synonym", map[string]string{"log.retention.hours": "3"}, nil, ErrReadOnly},
		{"per-broker config at default level", nil, map[string]string{"listeners": "PLAINTEXT://:1"}, ErrReadOnly},
		{"unknown", map[string]string{"nope": "1"}, nil, ErrUnknownConfig},
		{"bad value", nil, map[string]string{"log.segment.bytes": "1"}, ErrInvalidValue},
		{"cluster-wide at default level", nil, map[string]string{"log.segment.bytes": "1048576"}, nil},
		{"throttle rate per broker", map[string]string{"leader.replication.throttled.rate": "1000"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.WithDynamic(tt.perBroker, tt.clusterDef)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := ValidateBrokerUpdate(map[string]string{"num.io.threads": "0"}, true); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("ValidateBrokerUpdate num.io.threads=0: %v", err)
	}
	got, err := ValidateBrokerUpdate(map[string]string{"log.cleaner.threads": " 2 "}, false)
	if err != nil || got["log.cleaner.threads"] != "2" {
		t.Errorf("ValidateBrokerUpdate = %v, %v", got, err)
	}
}
