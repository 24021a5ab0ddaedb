package connect

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestConnectExactlyOnceSource runs a distributed worker with
// exactly.once.source.support=enabled (KIP-618) and a FileStreamSource
// connector with exactly.once.support=required (FileStreamSourceConnector
// declares SUPPORTED when it reads a file) and transaction.boundary=interval,
// so each task writes its records and their source offsets in one
// transaction, and the worker's leader writes the config topic
// transactionally. The worker is killed with SIGKILL while a transaction
// holds records (the high watermark is past the last stable offset), then
// started again: the new task's InitProducerId aborts the open transaction
// and it resumes at the last committed source offset. Read at
// read_committed the topic holds every source line exactly once; at
// read_uncommitted the aborted records show as duplicates, which is what an
// at-least-once source would leave.
func TestConnectExactlyOnceSource(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	dir := t.TempDir()
	source := &sourceFile{t: t, path: filepath.Join(dir, "source.txt")}
	const topic = "connect-eos-lines"

	source.Append(200)

	w := startWorker(t, env.Addr(), map[string]string{
		"group.id":                    "brook-connect-eos",
		"config.storage.topic":        "connect-eos-configs",
		"offset.storage.topic":        "connect-eos-offsets",
		"status.storage.topic":        "connect-eos-status",
		"exactly.once.source.support": "enabled",
		// The killed worker's member stays in the group until its session
		// expires; the restarted one waits for that rebalance.
		"session.timeout.ms":    "6000",
		"heartbeat.interval.ms": "1000",
	})
	// batch.size stays at its default (2000, more than the file ever
	// holds): a FileStreamSourceTask whose batch fills keeps the lines
	// already read into its buffer until the file grows again.
	w.createConnector("eos-source", map[string]string{
		"connector.class":                  "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max":                        "1",
		"file":                             source.path,
		"topic":                            topic,
		"exactly.once.support":             "required",
		"transaction.boundary":             "interval",
		"transaction.boundary.interval.ms": "3000",
	})
	w.waitRunning("eos-source")

	// Keep the file growing so a transaction is always open with records.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				source.Append(10)
			}
		}
	}()

	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Kill once some transaction has committed and the current one holds
	// records: the restart must then both resume and abort.
	testutil.Eventually(t, 2*time.Minute, func() error {
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err != nil || hw.Error() != nil {
			return fmt.Errorf("end offsets: %v %v", err, hw.Error())
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil || lso.Error() != nil {
			return fmt.Errorf("committed end offsets: %v %v", err, lso.Error())
		}
		h, _ := hw.Lookup(topic, 0)
		l, _ := lso.Lookup(topic, 0)
		if l.Offset <= 0 || h.Offset <= l.Offset {
			return fmt.Errorf("high watermark %d, last stable offset %d", h.Offset, l.Offset)
		}
		return nil
	})
	w.kill9()
	close(stop)
	<-done
	source.Append(100)
	w.start()
	w.waitRunning("eos-source")

	want := source.Lines()
	committed := readTopic(t, env.Addr(), topic, kgo.ReadCommitted(), len(want))
	counts := map[string]int{}
	for _, v := range committed {
		counts[v]++
	}
	for _, line := range want {
		if counts[line] != 1 {
			t.Errorf("read_committed: %q appears %d times, want once", line, counts[line])
		}
	}
	if len(committed) != len(want) {
		t.Errorf("read_committed: %d records for %d source lines", len(committed), len(want))
	}

	// At read_uncommitted the aborted transaction's records are there too:
	// without exactly-once they would have been the consumer's duplicates.
	all := readTopic(t, env.Addr(), topic, kgo.ReadUncommitted(), len(want))
	t.Logf("read_committed: %d records; read_uncommitted: %d records (aborted duplicates: %d) for %d source lines",
		len(committed), len(all), len(all)-len(committed), len(want))
	if len(all) <= len(committed) {
		t.Errorf("read_uncommitted shows no aborted records (%d records): the kill did not interrupt a transaction", len(all))
	}
}

// readTopic reads partition 0 of topic up to its end at the given
// isolation level and returns the JSON-converted values as lines: the
// worker's JsonConverter writes each string as a quoted JSON string.
func readTopic(t *testing.T, addr, topic string, iso kgo.IsolationLevel, atLeast int) []string {
	t.Helper()
	cl := testutil.Client(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	err := testutil.Poll(2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, strings.Trim(string(r.Value), `"`))
		})
		if len(got) < atLeast {
			return fmt.Errorf("read %d of at least %d records", len(got), atLeast)
		}
		return nil
	})
	if err != nil {
		// Go on to the counts: which lines are missing says more.
		t.Errorf("%s at %v: %v", topic, iso, err)
		logEnds(t, addr, topic)
		return got
	}
	// Whatever lies past the lines wanted (duplicates) must be read too.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, strings.Trim(string(r.Value), `"`))
		})
	}
	return got
}

// logEnds logs partition 0's high watermark and last stable offset: a
// last stable offset stuck below the high watermark is a transaction Brook
// still holds open.
func logEnds(t *testing.T, addr, topic string) {
	t.Helper()
	adm := kadm.NewClient(testutil.Client(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hw, err1 := adm.ListEndOffsets(ctx, topic)
	lso, err2 := adm.ListCommittedOffsets(ctx, topic)
	if err1 != nil || err2 != nil {
		t.Logf("end offsets of %s: %v %v", topic, err1, err2)
		return
	}
	h, _ := hw.Lookup(topic, 0)
	l, _ := lso.Lookup(topic, 0)
	t.Logf("%s-0: high watermark %d (%v), last stable offset %d (%v)", topic, h.Offset, h.Err, l.Offset, l.Err)
}
