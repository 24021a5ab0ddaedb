package broker

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/log"
)

// testBroker is an in-process broker on 127.0.0.1 with an ephemeral port.
type testBroker struct {
	t      testing.TB
	b      *Broker
	addr   string
	dir    string
	props  map[string]string
	cancel context.CancelFunc
	done   chan error
	// setup, if set, runs on every new Broker before Run, for tests that
	// replace a handler.
	setup func(*Broker)
}

// startBroker starts a broker with test defaults under overrides. The data
// directory survives restart().
func startBroker(t testing.TB, overrides map[string]string) *testBroker {
	t.Helper()
	return startBrokerWith(t, overrides, nil)
}

// startBrokerWith is startBroker with a setup hook run before each Run.
func startBrokerWith(t testing.TB, overrides map[string]string, setup func(*Broker)) *testBroker {
	t.Helper()
	tb := &testBroker{t: t, dir: t.TempDir(), setup: setup}
	tb.props = map[string]string{
		"broker.id":                        "0",
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         tb.dir,
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "4",
	}
	maps.Copy(tb.props, overrides)
	tb.start()
	t.Cleanup(tb.stop)
	return tb
}

func testLogger() *slog.Logger {
	if os.Getenv("BROOK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (tb *testBroker) start() {
	tb.t.Helper()
	cfg, _, err := config.FromMap(tb.props)
	if err != nil {
		tb.t.Fatalf("config: %v", err)
	}
	b, err := New(cfg, testLogger())
	if err != nil {
		tb.t.Fatalf("new broker: %v", err)
	}
	tb.b = b
	if tb.setup != nil {
		tb.setup(b)
	}
	tb.addr = b.Addrs()[0].String()
	// Restarts keep the ports, so that clients built before a restart work.
	var ls []string
	for i, a := range b.Addrs() {
		ls = append(ls, cfg.Listeners[i].Name+"://"+a.String())
	}
	tb.props["listeners"] = strings.Join(ls, ",")
	ctx, cancel := context.WithCancel(context.Background())
	tb.cancel = cancel
	tb.done = make(chan error, 1)
	go func() { tb.done <- b.Run(ctx) }()
}

// stop shuts the broker down cleanly and waits for it.
func (tb *testBroker) stop() {
	if tb.cancel == nil {
		return
	}
	tb.cancel()
	tb.cancel = nil
	select {
	case err := <-tb.done:
		if err != nil {
			tb.t.Errorf("broker run: %v", err)
		}
	case <-time.After(30 * time.Second):
		tb.t.Errorf("broker did not stop within 30s")
	}
}

func (tb *testBroker) restart() {
	tb.t.Helper()
	// A broker alone leads again what it led, but only once its controller
	// has sent the LeaderAndIsr; tests of one broker use the partitions at once.
	var led []log.TopicPartition
	if len(tb.b.meta.liveBrokers(tb.b.cfg.InterBrokerListenerName)) == 1 {
		for _, p := range tb.b.replicas.All() {
			if p.IsLeader() {
				led = append(led, p.TopicPartition())
			}
		}
	}
	tb.stop()
	tb.start()
	for _, p := range led {
		tb.leaderOf(p.Topic, p.Partition)
	}
}

// client returns a franz-go client for the broker, closed at cleanup.
func (tb *testBroker) client(opts ...kgo.Opt) *kgo.Client {
	tb.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tb.addr)}, opts...)...)
	if err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Cleanup(cl.Close)
	return cl
}

func (tb *testBroker) admin() *kadm.Client {
	return kadm.NewClient(tb.client())
}

// createTopic creates a topic and fails the test on any error.
func (tb *testBroker) createTopic(name string, partitions int32, configs map[string]*string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := tb.admin().CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil || resp.Err != nil {
		tb.t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
	// CreateTopics answers once the metadata names the leaders, as
	// Kafka's does; the LeaderAndIsr that opens the logs may still be on
	// its way, and tests of one broker read the partitions directly.
	if len(tb.b.meta.liveBrokers(tb.b.cfg.InterBrokerListenerName)) == 1 {
		for p := range partitions {
			tb.leaderOf(name, p)
		}
	}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// roundTrip is rawRoundTrip for the test's goroutine: errors fail the test.
func (tb *testBroker) roundTrip(req kmsg.Request) kmsg.Response {
	tb.t.Helper()
	resp, err := rawRoundTrip(tb.addr, req)
	if err != nil {
		tb.t.Fatal(err)
	}
	return resp
}
