package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestConnectFileStreamsSurviveRestart runs a FileStreamSource connector
// (file -> topic) and a FileStreamSink connector (topic -> file) on a
// distributed worker, restarts the worker, appends more lines, and checks
// that the connectors and their configs came back from the config topic,
// the source resumed at its stored offset and the sink at its group's
// committed offset: the sink file holds exactly the source lines, in
// order, none lost and none twice. The worker creates its three internal
// topics compacted and checks that with DescribeConfigs.
func TestConnectFileStreamsSurviveRestart(t *testing.T) {
	env := harness.Start(t, brookBin, map[string]string{"log.cleaner.backoff.ms": "100"})
	dir := t.TempDir()
	source, sink := &sourceFile{t: t, path: filepath.Join(dir, "source.txt")}, filepath.Join(dir, "sink.txt")
	source.Append(300)

	w := startWorker(t, env.Addr(), nil)
	sourceConfig := map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max":       "1",
		"file":            source.path,
		"topic":           "connect-lines",
	}
	sinkConfig := map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"tasks.max":       "1",
		"file":            sink,
		"topics":          "connect-lines",
	}
	w.createConnector("file-source", sourceConfig)
	w.createConnector("file-sink", sinkConfig)
	w.waitRunning("file-source")
	w.waitRunning("file-sink")
	waitSink(t, sink, source.Lines())

	// The worker created its topics compacted (it refuses to start on
	// topics that are not).
	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	configs, err := adm.DescribeTopicConfigs(ctx, "connect-configs", "connect-offsets", "connect-status")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range configs {
		policy := ""
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				policy = c.MaybeValue()
			}
		}
		if rc.Err != nil || policy != "compact" {
			t.Errorf("topic %s: cleanup.policy %q (%v), want compact", rc.Name, policy, rc.Err)
		}
	}

	w.restart()
	source.Append(200)
	for name, want := range map[string]map[string]string{"file-source": sourceConfig, "file-sink": sinkConfig} {
		body, err := w.get("/connectors/" + name + "/config")
		if err != nil {
			t.Fatalf("config of %s after restart: %v", name, err)
		}
		var got map[string]string
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s after restart: %s = %q, want %q", name, k, got[k], v)
			}
		}
	}
	w.waitRunning("file-source")
	w.waitRunning("file-sink")
	waitSink(t, sink, source.Lines())

	// The topic holds each line once: the source did not start over.
	ends, err := adm.ListEndOffsets(ctx, "connect-lines")
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != int64(len(source.Lines())) {
		t.Errorf("connect-lines holds %d records for %d source lines", total, len(source.Lines()))
	}
}

// waitSink waits until the sink file holds as many lines as want, then
// compares them: a duplicate or a loss shows as a difference, since the
// connectors copy in order.
func waitSink(t *testing.T, sink string, want []string) {
	t.Helper()
	var got []string
	err := testutil.Poll(2*time.Minute, func() error {
		data, err := os.ReadFile(sink)
		if err != nil {
			return err
		}
		got = harness.Lines(string(data))
		if len(got) < len(want) {
			return fmt.Errorf("sink holds %d of %d lines", len(got), len(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sink file differs from the source: %d lines, want %d\nfirst sink lines: %q", len(got), len(want), got[:min(5, len(got))])
	}
}
