package log

import (
	"bytes"
	"errors"
	"testing"
)

func TestOffsetCheckpointFormat(t *testing.T) {
	m := map[TopicPartition]int64{{"b", 1}: 7, {"a-x", 0}: 0, {"a-x", 10}: 1 << 40}
	enc := encodeOffsetCheckpoint(m)
	want := "0\n3\na-x 0 0\na-x 10 1099511627776\nb 1 7\n"
	if string(enc) != want {
		t.Fatalf("encoded %q, want %q", enc, want)
	}
	got, err := decodeOffsetCheckpoint(enc)
	if err != nil || len(got) != 3 || got[TopicPartition{"a-x", 10}] != 1<<40 {
		t.Fatalf("decode: %v, %v", got, err)
	}
	for _, bad := range []string{"1\n0\n", "0\n2\na 0 1\n", "0\n1\na 0\n", "0\n1\na x 1\n", "0\n-1\n", "0\n1\na 0 1\nb 0 1\n"} {
		if _, err := decodeOffsetCheckpoint([]byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

func TestEpochCheckpointAndMetadataFormats(t *testing.T) {
	enc := encodeEpochCheckpoint([]epochEntry{{0, 0}, {4, 100}})
	if string(enc) != "0\n2\n0 0\n4 100\n" {
		t.Fatalf("epoch checkpoint %q", enc)
	}
	if got, err := decodeEpochCheckpoint(enc); err != nil || len(got) != 2 || got[1] != (epochEntry{4, 100}) {
		t.Fatalf("decode: %v, %v", got, err)
	}
	// Kafka's Uuid.toString of 0x000...01 is AAAAAAAAAAAAAAAAAAAAAQ.
	id := [16]byte{15: 1}
	if s := FormatTopicID(id); s != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Fatalf("topic id %q", s)
	}
	pm := encodePartitionMetadata(id)
	if string(pm) != "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n" {
		t.Fatalf("partition.metadata %q", pm)
	}
	if got, err := decodePartitionMetadata(pm); err != nil || got != id {
		t.Fatalf("decode partition.metadata: %v %v", got, err)
	}
	mp, err := decodeMetaProperties([]byte("#comment\nversion=0\nbroker.id=3\ncluster.id=abc\n"))
	if err != nil || mp.BrokerID != 3 || mp.ClusterID != "abc" {
		t.Fatalf("meta.properties: %+v %v", mp, err)
	}
	// As Kafka 3.9 writes it (Properties.store: a date comment), with the
	// directory.id a ZooKeeper broker in KRaft migration adds.
	kafka39 := "#\n#Tue Dec 01 15:31:05 UTC 2026\nbroker.id=1\nversion=0\ndirectory.id=7jkM1S2zQ3qP0ugJ5dUz0Q\ncluster.id=AvivNMiRTvGp9CGn7oJN2g\n"
	if mp, err := decodeMetaProperties([]byte(kafka39)); err != nil || mp.BrokerID != 1 || mp.ClusterID != "AvivNMiRTvGp9CGn7oJN2g" {
		t.Fatalf("Kafka 3.9 meta.properties: %+v %v", mp, err)
	}
	// Version 1 is KRaft's; a ZooKeeper-mode Kafka 3.9 broker refuses it
	// too unless migrating (REQUIRE_V0).
	if _, err := decodeMetaProperties([]byte("version=1\nnode.id=3\n")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("KRaft meta.properties accepted: %v", err)
	}
}

func TestParseDirName(t *testing.T) {
	cases := []struct {
		in   string
		tp   TopicPartition
		want bool
	}{
		{"orders-0", TopicPartition{"orders", 0}, true},
		{"my-topic-12", TopicPartition{"my-topic", 12}, true},
		{"__consumer_offsets-49", TopicPartition{"__consumer_offsets", 49}, true},
		{"orders-01", TopicPartition{}, false},
		{"orders--1", TopicPartition{"orders-", 1}, true},
		{"orders-+1", TopicPartition{}, false},
		{"orders-0.abc-delete", TopicPartition{}, false},
		{"orders-0.abc-future", TopicPartition{}, false},
		{"-0", TopicPartition{}, false},
		{"orders", TopicPartition{}, false},
	}
	for _, tc := range cases {
		tp, ok := parseDirName(tc.in)
		if ok != tc.want || tp != tc.tp {
			t.Errorf("parseDirName(%q) = %+v, %v", tc.in, tp, ok)
		}
	}
}

func FuzzCheckpoints(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\nt 0 5\n"))
	f.Add([]byte("0\n2\n0 0\n4 100\n"))
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	f.Add([]byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := decodeOffsetCheckpoint(data); err == nil {
			again, err := decodeOffsetCheckpoint(encodeOffsetCheckpoint(m))
			if err != nil || len(again) != len(m) {
				t.Fatalf("re-encode: %v", err)
			}
		}
		if e, err := decodeEpochCheckpoint(data); err == nil {
			if _, err := decodeEpochCheckpoint(encodeEpochCheckpoint(e)); err != nil {
				t.Fatalf("re-encode epochs: %v", err)
			}
		}
		_, _ = decodePartitionMetadata(data)
		_, _ = decodeMetaProperties(data)
		_, _ = decodeProducerSnapshot(data)
	})
}

// Kafka 3.9 creates its checkpoint files empty (a follower's
// leader-epoch-checkpoint before its first epoch, cleaner-offset-checkpoint
// before the first cleaning) and reads an empty file as no entries; a log
// dir Kafka left must not read as corrupt. A truncated header still is.
func TestEmptyCheckpointIsEmpty(t *testing.T) {
	if m, err := decodeOffsetCheckpoint(nil); err != nil || len(m) != 0 {
		t.Errorf("empty offset checkpoint: %v, %v; want no entries", m, err)
	}
	if es, err := decodeEpochCheckpoint([]byte{}); err != nil || len(es) != 0 {
		t.Errorf("empty leader-epoch-checkpoint: %v, %v; want no entries", es, err)
	}
	for _, bad := range []string{"\n", "0\n", "0\n1\n"} {
		if _, err := decodeOffsetCheckpoint([]byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("offset checkpoint %q: error %v, want ErrCorrupt", bad, err)
		}
	}
}
