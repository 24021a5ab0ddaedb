package log

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// File names, as Kafka names them.
const (
	recoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	logStartCheckpointFile       = "log-start-offset-checkpoint"
	highWatermarkCheckpointFile  = "replication-offset-checkpoint"
	metaPropertiesFile           = "meta.properties"
	cleanShutdownFile            = ".kafka_cleanshutdown"
	partitionMetadataFile        = "partition.metadata"
	leaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	checkpointVersion            = 0
	partitionMetadataVersion     = 0
	leaderEpochCheckpointVersion = 0
)

// writeFileAtomic replaces name with data so that a crash leaves either the
// old or the new content: write a temp file, fsync it, rename, fsync the dir.
func writeFileAtomic(fs FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := fs.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s: %w", name, err)
	}
	return fs.SyncDir(filepath.Dir(name))
}

// encodeOffsetCheckpoint renders Kafka's per-log-dir checkpoint text:
// "0\n<count>\n<topic> <partition> <offset>\n...". Lines are sorted so the
// file is deterministic.
func encodeOffsetCheckpoint(m map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(m))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, m[tp])
	}
	return b.Bytes()
}

// parseCheckpointLines checks the version and count header shared by all
// of Kafka's checkpoint files and returns the entry lines split in fields.
func parseCheckpointLines(data []byte, wantVersion, fields int) ([][]string, error) {
	// Kafka creates its checkpoint files empty (CheckpointFile's
	// constructor) and reads an empty one as no entries: a follower's
	// leader-epoch-checkpoint before its first epoch, the
	// cleaner-offset-checkpoint before the first cleaning. Its writes, like
	// Brook's, go through a renamed temp file, so empty is never a torn
	// write.
	if len(data) == 0 {
		return nil, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	line, ok := next()
	if !ok {
		return nil, fmt.Errorf("%w: checkpoint: missing version", ErrCorrupt)
	}
	if v, err := strconv.Atoi(line); err != nil || v != wantVersion {
		return nil, fmt.Errorf("%w: checkpoint: version %q", ErrCorrupt, line)
	}
	line, ok = next()
	if !ok {
		return nil, fmt.Errorf("%w: checkpoint: missing count", ErrCorrupt)
	}
	n, err := strconv.Atoi(line)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: checkpoint: count %q", ErrCorrupt, line)
	}
	out := make([][]string, 0, min(n, 1<<16))
	for i := 0; i < n; i++ {
		line, ok = next()
		if !ok {
			return nil, fmt.Errorf("%w: checkpoint: %d of %d entries", ErrCorrupt, i, n)
		}
		f := strings.Split(line, " ")
		if len(f) != fields {
			return nil, fmt.Errorf("%w: checkpoint: line %q", ErrCorrupt, line)
		}
		out = append(out, f)
	}
	if line, ok = next(); ok && line != "" {
		return nil, fmt.Errorf("%w: checkpoint: %d entries expected, more present", ErrCorrupt, n)
	}
	return out, nil
}

func decodeOffsetCheckpoint(data []byte) (map[TopicPartition]int64, error) {
	lines, err := parseCheckpointLines(data, checkpointVersion, 3)
	if err != nil {
		return nil, err
	}
	m := make(map[TopicPartition]int64, len(lines))
	for _, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || f[0] == "" {
			return nil, fmt.Errorf("%w: checkpoint: entry %q", ErrCorrupt, strings.Join(f, " "))
		}
		m[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return m, nil
}

// readOffsetCheckpoint returns an empty map when the file does not exist.
func readOffsetCheckpoint(fs FS, name string) (map[TopicPartition]int64, error) {
	data, err := fs.ReadFile(name)
	if os.IsNotExist(err) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	m, err := decodeOffsetCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return m, nil
}

// epochEntry is one leader-epoch-checkpoint line: the first offset written
// under a leader epoch.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

func encodeEpochCheckpoint(entries []epochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", leaderEpochCheckpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

func decodeEpochCheckpoint(data []byte) ([]epochEntry, error) {
	lines, err := parseCheckpointLines(data, leaderEpochCheckpointVersion, 2)
	if err != nil {
		return nil, err
	}
	out := make([]epochEntry, 0, len(lines))
	for _, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: leader epoch checkpoint: entry %q", ErrCorrupt, strings.Join(f, " "))
		}
		out = append(out, epochEntry{Epoch: int32(e), StartOffset: o})
	}
	return out, nil
}

// FormatTopicID renders a topic ID as Kafka's Uuid.toString does: URL-safe
// base64 without padding (22 characters).
func FormatTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID reverses FormatTopicID.
func ParseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("%w: topic id %q", ErrCorrupt, s)
	}
	copy(id[:], b)
	return id, nil
}

func encodePartitionMetadata(id [16]byte) []byte {
	return fmt.Appendf(nil, "version: %d\ntopic_id: %s\n", partitionMetadataVersion, FormatTopicID(id))
}

func decodePartitionMetadata(data []byte) ([16]byte, error) {
	var id [16]byte
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 {
		return id, fmt.Errorf("%w: partition.metadata: %d lines", ErrCorrupt, len(lines))
	}
	v, ok := strings.CutPrefix(lines[0], "version: ")
	if !ok || v != strconv.Itoa(partitionMetadataVersion) {
		return id, fmt.Errorf("%w: partition.metadata: version line %q", ErrCorrupt, lines[0])
	}
	t, ok := strings.CutPrefix(lines[1], "topic_id: ")
	if !ok {
		return id, fmt.Errorf("%w: partition.metadata: topic line %q", ErrCorrupt, lines[1])
	}
	return ParseTopicID(t)
}

// cleanShutdownContent is what Kafka 3.9's CleanShutdownFileHandler
// writes in .kafka_cleanshutdown in ZooKeeper mode (no broker epoch). A
// ZooKeeper-mode broker only checks that the file exists; a KRaft broker
// (the next step of a migration) parses it, so it is Kafka's JSON rather
// than empty.
const cleanShutdownContent = `{"version":0,"brokerEpoch":-1}`

// metaProperties is the ZooKeeper-mode (version 0) meta.properties.
type metaProperties struct {
	BrokerID  int32
	ClusterID string
}

func encodeMetaProperties(m metaProperties) []byte {
	// Java's Properties.store writes a comment line first; readers skip it.
	return fmt.Appendf(nil, "#\n#Written by Brook\ncluster.id=%s\nversion=0\nbroker.id=%d\n", m.ClusterID, m.BrokerID)
}

func decodeMetaProperties(data []byte) (metaProperties, error) {
	var m metaProperties
	kv := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return m, fmt.Errorf("%w: meta.properties: line %q", ErrCorrupt, line)
		}
		kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if kv["version"] != "0" {
		return m, fmt.Errorf("%w: meta.properties: version %q (only 0, ZooKeeper mode, is supported)", ErrCorrupt, kv["version"])
	}
	id, err := strconv.ParseInt(kv["broker.id"], 10, 32)
	if err != nil {
		return m, fmt.Errorf("%w: meta.properties: broker.id %q", ErrCorrupt, kv["broker.id"])
	}
	m.BrokerID = int32(id)
	m.ClusterID = kv["cluster.id"]
	return m, nil
}
