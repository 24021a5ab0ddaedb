package compaction

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// cleanerCheckpoint reads the log dir's cleaner-offset-checkpoint (Kafka's
// format: version, count, then "topic partition offset" lines) and returns
// the first dirty offset of each partition of topic; a missing file means
// nothing was cleaned yet.
func cleanerCheckpoint(t *testing.T, dataDir, topic string) map[int32]int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dataDir, "cleaner-offset-checkpoint"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int32]int64{}
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if line < 2 || len(fields) != 3 || fields[0] != topic {
			continue
		}
		p, err1 := strconv.ParseInt(fields[1], 10, 32)
		o, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("cleaner-offset-checkpoint: bad line %q", sc.Text())
		}
		out[int32(p)] = o
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// segmentFiles returns the .log, .index and .timeindex files of one
// partition directory, in base offset order, and the active segment's base
// offset (the largest).
func segmentFiles(t *testing.T, partDir string) (files []string, activeBase int64) {
	t.Helper()
	entries, err := os.ReadDir(partDir)
	if err != nil {
		t.Fatal(err)
	}
	activeBase = -1
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if ext != ".log" && ext != ".index" && ext != ".timeindex" {
			continue
		}
		files = append(files, filepath.Join(partDir, name))
		if ext == ".log" {
			base, err := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
			if err != nil {
				t.Fatalf("segment %s: %v", name, err)
			}
			activeBase = max(activeBase, base)
		}
	}
	slices.Sort(files)
	return files, activeBase
}

// logBytes is the size of the .log files in dir: the records themselves
// (the active segment's index files are preallocated, so they would hide
// what compaction does).
func logBytes(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".log" {
			continue
		}
		info, err := e.Info()
		if os.IsNotExist(err) {
			continue // the cleaner renamed it to .deleted meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

func partitionDir(dataDir, topic string, p int32) string {
	return filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p))
}

// listing describes a partition directory's files and sizes, for failures.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%10d %s\n", info.Size(), e.Name())
		}
	}
	return b.String()
}
