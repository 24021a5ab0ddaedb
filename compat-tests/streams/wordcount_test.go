package streams

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

const (
	inputTopic  = "words"
	outputTopic = "counts"
	partitions  = 4
	// startTimeout covers two JVMs starting and the group's first
	// rebalance on a busy 2-core machine.
	startTimeout = 2 * time.Minute
	// finishTimeout covers the killed instance's session timeout (10s), the
	// abort of its open transaction (transaction.timeout.ms 10s), the
	// rebalances and restoring the count store from its changelog.
	finishTimeout = 90 * time.Second
	// killBatch is how many words go per produce request after the first
	// third, so that words keep flowing around the kill.
	killBatch = 10
	// produceTimeout bounds producing one third of the input.
	produceTimeout = 30 * time.Second
)

// counts collects the output topic as a read_committed consumer sees it:
// per word, every count in offset order.
type counts struct {
	mu     sync.Mutex
	byWord map[string][]int64
	bad    []string
}

func (c *counts) add(r *kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(r.Value) != 8 {
		c.bad = append(c.bad, fmt.Sprintf("%s@%d/%d: value %x is not a long", r.Key, r.Partition, r.Offset, r.Value))
		return
	}
	w := string(r.Key)
	c.byWord[w] = append(c.byWord[w], int64(binary.BigEndian.Uint64(r.Value)))
}

// complete is nil once every word's last count is its expected total. A
// count past the total can never come right, so it is an overshoot error.
func (c *counts) complete(want map[string]int) (overshoot, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for w, n := range want {
		got := c.byWord[w]
		if len(got) > 0 && got[len(got)-1] > int64(n) {
			return fmt.Errorf("word %s counted %d times, produced %d times: counts %v", w, got[len(got)-1], n, got), nil
		}
		if len(got) == 0 || got[len(got)-1] != int64(n) {
			last := int64(0)
			if len(got) > 0 {
				last = got[len(got)-1]
			}
			missing = append(missing, fmt.Sprintf("%s at %d of %d", w, last, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("output incomplete: %s", strings.Join(missing, ", "))
	}
	return nil, nil
}

func (c *counts) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.byWord {
		n += len(l)
	}
	return n
}

// consumeCounts reads the output topic read_committed until the test ends.
func consumeCounts(t *testing.T, addr string) *counts {
	c := &counts{byWord: map[string][]int64{}}
	cl := testutil.Client(t, addr,
		kgo.ConsumeTopics(outputTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(c.add)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// wordStream is the test's input: word i of len(words) occurs
// perWord*(i+1) times, in a fixed shuffled order.
func wordStream(words []string, perWord int) ([]string, map[string]int) {
	want := map[string]int{}
	var all []string
	for i, w := range words {
		n := perWord * (i + 1)
		want[w] = n
		for j := 0; j < n; j++ {
			all = append(all, w)
		}
	}
	rng := rand.New(rand.NewSource(1))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all, want
}

func produceWords(t *testing.T, cl *kgo.Client, words []string) {
	t.Helper()
	recs := make([]*kgo.Record, len(words))
	for i, w := range words {
		// No key: groupBy re-keys by word through the repartition topic.
		recs[i] = &kgo.Record{Topic: inputTopic, Value: []byte(w)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), produceTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d words: %v", len(words), err)
	}
}

// TestWordCountExactlyOnceAcrossKill9 runs two WordCount instances of one
// application with exactly_once_v2, kills one with SIGKILL while words
// flow and restarts it, and checks the read_committed output: each word's
// counts are exactly 1, 2, ... n, n being how often it was produced.
func TestWordCountExactlyOnceAcrossKill9(t *testing.T) {
	cp := compileApp(t)
	env := harness.Start(t, brookBin, nil)
	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	for _, topic := range []string{inputTopic, outputTopic} {
		resp, err := adm.CreateTopics(context.Background(), partitions, 1, nil, topic)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}

	const appID = "brook-wordcount"
	a := newApp(t, "instance-a", cp, env.Addr(), appID, t.TempDir(), inputTopic, outputTopic)
	b := newApp(t, "instance-b", cp, env.Addr(), appID, t.TempDir(), inputTopic, outputTopic)
	alive := func() error {
		if err := a.exited(); err != nil {
			return err
		}
		return b.exited()
	}
	a.start()
	b.start()
	testutil.Eventually(t, startTimeout, func() error {
		if err := alive(); err != nil {
			return err
		}
		if !a.running() || !b.running() {
			return fmt.Errorf("instances not RUNNING yet (a %v, b %v)", a.running(), b.running())
		}
		return nil
	})

	out := consumeCounts(t, env.Addr())
	// The producer is idempotent (franz-go's default), so a retry cannot
	// duplicate a word and skew the expected counts.
	prod := testutil.Client(t, env.Addr())
	all, want := wordStream([]string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}, 60)
	third := len(all) / 3

	t.Logf("instances RUNNING; producing %d words", len(all))
	produceWords(t, prod, all[:third])
	testutil.Eventually(t, finishTimeout, func() error {
		if err := alive(); err != nil {
			return err
		}
		if n := out.total(); n < third/2 {
			return fmt.Errorf("%d of %d first updates in the output", n, third)
		}
		return nil
	})
	// Kill while words flow, in small batches, so the instance dies with an
	// open transaction holding processed but uncommitted counts (under
	// at_least_once this same kill makes counts repeat).
	rest := all[third:]
	for i := 0; i < len(rest); i += killBatch {
		produceWords(t, prod, rest[i:min(i+killBatch, len(rest))])
		if i < len(rest)/2 && i+killBatch >= len(rest)/2 {
			a.kill()
			t.Logf("killed instance-a with %d updates in the output", out.total())
		}
	}
	a.start()
	t.Logf("restarted instance-a")

	testutil.Eventually(t, finishTimeout, func() error {
		if err := alive(); err != nil {
			return err
		}
		overshoot, err := out.complete(want)
		if overshoot != nil {
			t.Fatal(overshoot)
		}
		return err
	})

	checkInternalTopics(t, adm, appID)

	// Everything is in: no more records arrive that the checks could miss.
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, bad := range out.bad {
		t.Errorf("bad record: %s", bad)
	}
	for w, n := range want {
		got := out.byWord[w]
		for i, c := range got {
			if c != int64(i+1) {
				t.Errorf("word %s: update %d is count %d, want %d (counts %v)", w, i, c, i+1, got)
				break
			}
		}
		if len(got) != n {
			t.Errorf("word %s: %d updates, want %d", w, len(got), n)
		}
	}
	t.Logf("%d words, %d count updates checked", len(all), len(all))
}

// checkInternalTopics checks what Streams made Brook do with its internal
// topics: the count store's changelog was created compacted, and the
// repartition topic's consumed records were purged with DeleteRecords.
func checkInternalTopics(t *testing.T, adm *kadm.Client, appID string) {
	t.Helper()
	ctx := context.Background()
	store := appID + "-KSTREAM-AGGREGATE-STATE-STORE-0000000002"
	changelog, repartition := store+"-changelog", store+"-repartition"
	rcs, err := adm.DescribeTopicConfigs(ctx, changelog)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", changelog, err)
	}
	rc, err := rcs.On(changelog, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe configs of %s: %v", changelog, err)
	}
	policy := ""
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" {
			policy = c.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Errorf("%s: cleanup.policy %q, want compact", changelog, policy)
	}
	testutil.Eventually(t, finishTimeout, func() error {
		starts, err := adm.ListStartOffsets(ctx, repartition)
		if err != nil {
			return fmt.Errorf("list start offsets of %s: %w", repartition, err)
		}
		var purged int64
		var perr error
		starts.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				perr = o.Err
			}
			purged += o.Offset
		})
		if perr != nil {
			return fmt.Errorf("list start offsets of %s: %w", repartition, perr)
		}
		if purged == 0 {
			return fmt.Errorf("%s: no records purged yet", repartition)
		}
		return nil
	})
}
