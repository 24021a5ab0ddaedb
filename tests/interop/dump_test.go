package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// dumpSuffixes are the files of a partition dir Kafka's DumpLogSegments
// checks (an index against its .log) or parses.
var dumpSuffixes = []string{".index", ".timeindex", ".txnindex", ".snapshot"}

// checkDump runs Kafka 3.9's own DumpLogSegments over every segment,
// index, transaction index and producer snapshot of the topics' partition
// 0 in dir, as written by who, with its index sanity check and its check
// of every offset and time index entry against the log
// (--verify-index-only). A round trip alone would not see a broken index
// entry: Kafka checks indexes only when it recovers a segment, and a
// lookup through a wrong entry merely starts a fetch elsewhere. It also
// fails unless the transactional topic has a .txnindex holding its
// aborted transactions.
//
// After a crash (crashed) the active segment's offset and time indexes
// are left out, and only --verify-index-only runs (one JVM less): they are
// preallocated (segment.index.bytes) and hold zeros past their last entry
// until the segment is closed, which Kafka's sanity check rejects ("the
// last timestamp is 0"), in Kafka's own dirs after a kill -9 as in
// Brook's; recovery rebuilds them.
func checkDump(t *testing.T, dir, who string, topics []string, crashed bool) {
	t.Helper()
	var files []string
	for _, topic := range topics {
		pdir := filepath.Join(dir, topic+"-0")
		ents, err := os.ReadDir(pdir)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		bases, err := segmentBases(pdir)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		active := fmt.Sprintf("%020d", bases[len(bases)-1])
		for _, e := range ents {
			name := e.Name()
			if !slices.ContainsFunc(dumpSuffixes, func(s string) bool { return strings.HasSuffix(name, s) }) {
				continue
			}
			if crashed && (name == active+".index" || name == active+".timeindex") {
				continue
			}
			files = append(files, filepath.Join(pdir, name))
		}
	}
	if !slices.ContainsFunc(files, func(f string) bool {
		return strings.Contains(f, "/"+topicTxn+"-0/") && strings.HasSuffix(f, ".txnindex")
	}) {
		t.Errorf("%s: no .txnindex in %s-0 after aborted transactions", who, topicTxn)
	}
	t.Setenv("BROOK_KAFKA_HOME", testutil.KafkaRelease(t, "kafka3"))
	modes := []string{"--verify-index-only"}
	if !crashed {
		modes = append(modes, "--index-sanity-check")
	}
	for _, mode := range modes {
		out, stderr, err := testutil.KafkaTool(t, "kafka-run-class.sh", "kafka.tools.DumpLogSegments",
			mode, "--files", strings.Join(files, ","))
		if err != nil {
			t.Errorf("%s: Kafka's DumpLogSegments %s: %v\n%s\n%s", who, mode, err, stderr, out)
			continue
		}
		for _, bad := range []string{"Mismatches in", "mismatch", "out of order", "Exception", "is corrupt"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: Kafka's DumpLogSegments %s finds %q in the files:\n%s", who, mode, bad, out)
			}
		}
	}
}
