package single

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// produceAcked produces n records with acks=all and returns the values the
// broker acknowledged, per partition in offset order.
func produceAcked(t *testing.T, addr, topic string, n int) map[int32][]string {
	t.Helper()
	cl := testutil.Client(t, addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	acked := map[int32]map[int64]string{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("value-%d", i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if acked[r.Partition] == nil {
				acked[r.Partition] = map[int64]string{}
			}
			acked[r.Partition][r.Offset] = string(r.Value)
		})
	}
	wg.Wait()
	out := map[int32][]string{}
	for p, byOffset := range acked {
		for o := int64(0); o < int64(len(byOffset)); o++ {
			v, ok := byOffset[o]
			if !ok {
				t.Fatalf("partition %d: acknowledged offsets are not contiguous (no %d)", p, o)
			}
			out[p] = append(out[p], v)
		}
	}
	return out
}

// readAll consumes every partition of topic from the start until it holds
// as many records as want, and compares.
func readAll(t *testing.T, addr, topic string, want map[int32][]string) {
	t.Helper()
	total := 0
	for _, vs := range want {
		total += len(vs)
	}
	cl := testutil.Client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := map[int32][]string{}
	for n := 0; n < total; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", n, total)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	for p, vs := range want {
		if strings.Join(got[p], ",") != strings.Join(vs, ",") {
			t.Fatalf("partition %d after restart: got %d records, want the %d acknowledged, in order", p, len(got[p]), len(vs))
		}
	}
}

func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(testutil.Client(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
}

func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	p := testutil.StartBrook(t, brookBin, nil)
	createTopic(t, p.Addr(), "crash", 4)
	want := produceAcked(t, p.Addr(), "crash", 5000)
	p.Kill9()
	p.Restart()
	readAll(t, p.Addr(), "crash", want)
	if _, err := os.Stat(filepath.Join(p.DataDir(), ".kafka_cleanshutdown")); err == nil {
		t.Fatalf("clean-shutdown marker present while the broker runs after a crash")
	}
}

func TestSIGTERMShutsDownCleanly(t *testing.T) {
	p := testutil.StartBrook(t, brookBin, nil)
	createTopic(t, p.Addr(), "clean", 2)
	want := produceAcked(t, p.Addr(), "clean", 2000)
	if err := p.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.LogTail(30))
	}
	if _, err := os.Stat(filepath.Join(p.DataDir(), ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("no clean-shutdown marker after SIGTERM: %v\n%s", err, p.LogTail(30))
	}
	p.Restart()
	readAll(t, p.Addr(), "clean", want)
}

func TestBadConfigExitsWithStatus2(t *testing.T) {
	for name, args := range map[string][]string{
		"bad value":          {"--override", "num.partitions=lots"},
		"out of range":       {"--override", "message.max.bytes=-5"},
		"missing properties": {"--config", filepath.Join(t.TempDir(), "absent.properties")},
	} {
		cmd := exec.Command(brookBin, args...)
		out, err := cmd.CombinedOutput()
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 2 {
			t.Fatalf("%s: exit %v, want status 2; output:\n%s", name, err, out)
		}
		key := strings.SplitN(strings.TrimPrefix(args[1], "--"), "=", 2)[0]
		if name != "missing properties" && !strings.Contains(string(out), key) {
			t.Fatalf("%s: message does not name %s:\n%s", name, key, out)
		}
	}
}

func TestUnknownConfigOnlyWarns(t *testing.T) {
	p := testutil.StartBrook(t, brookBin, map[string]string{"no.such.config": "1"})
	if !strings.Contains(p.LogTail(50), "no.such.config") {
		t.Fatalf("no warning about the unknown key:\n%s", p.LogTail(50))
	}
}

func TestKcatAgainstProcess(t *testing.T) {
	p := testutil.StartBrook(t, brookBin, nil)
	if _, stderr, err := testutil.Kcat(t, strings.NewReader("one\ntwo\nthree\n"), "-b", p.Addr(), "-P", "-t", "kc"); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, stderr)
	}
	out, stderr, err := testutil.Kcat(t, nil, "-b", p.Addr(), "-C", "-t", "kc", "-o", "beginning", "-e", "-f", "%o:%s\n")
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, stderr)
	}
	if out != "0:one\n1:two\n2:three\n" {
		t.Fatalf("kcat -C printed %q", out)
	}
	out, stderr, err = testutil.Kcat(t, nil, "-b", p.Addr(), "-L", "-t", "kc")
	if err != nil || !strings.Contains(out, `topic "kc" with 1 partitions`) {
		t.Fatalf("kcat -L: %v\n%s%s", err, out, stderr)
	}
}
