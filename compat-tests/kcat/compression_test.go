package kcat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// storedCodecs reads partition 0's segment files from the broker's data
// dir and returns the codec of every batch and the records they hold.
func storedCodecs(t *testing.T, env *harness.Env, topic string) (codecs []batch.Compression, records int) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(env.Brook.DataDir(), topic+"-0", "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment of %s-0 in %s: %v", topic, env.Brook.DataDir(), err)
	}
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			if err != nil || h.Size() > len(b) {
				t.Fatalf("%s: batch at %d bytes from the end: %v", seg, len(b), err)
			}
			codecs = append(codecs, h.Compression())
			records += int(h.RecordCount)
			b = b[h.Size():]
		}
	}
	return codecs, records
}

// TestKcatCompressionStored: kcat -z <codec> must reach the log compressed
// with that codec. librdkafka before 2.11.1 (Debian's 2.0.2 here) sends
// gzip, snappy and lz4 uncompressed when the broker advertises Produce
// from above v0 (librdkafka#4956); records still round-trip then, so only
// the stored codec shows it.
func TestKcatCompressionStored(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	const n = 50
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("line %d %s", i, strings.Repeat("compressible ", 20)))
	}
	input := strings.Join(lines, "\n") + "\n"
	for _, codec := range []batch.Compression{batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		topic := "compat-kcat-z-" + codec.String()
		createTopic(t, adm, topic, 1)
		// One batch: linger long enough to gather all lines.
		out, errOut := env.Kcat(strings.NewReader(input), "-b", env.Addr(), "-P", "-t", topic, "-p", "0",
			"-z", codec.String(), "-X", "linger.ms=200", "-X", "acks=all")
		codecs, records := storedCodecs(t, env, topic)
		if records != n {
			env.Fatalf(out, errOut, "%s: %d records stored, want %d", topic, records, n)
		}
		for i, c := range codecs {
			if c != codec {
				env.Errorf(out, errOut, "%s: batch %d of %d stored with codec %s, want %s", topic, i, len(codecs), c, codec)
			}
		}
		out, errOut = env.Kcat(nil, "-b", env.Addr(), "-C", "-t", topic, "-o", "beginning", "-e", "-q")
		if got := harness.Lines(out); strings.Join(got, "\n") != strings.Join(lines, "\n") {
			env.Errorf(out, errOut, "%s: consumed %d lines, want the %d produced", topic, len(got), n)
		}
	}
}
