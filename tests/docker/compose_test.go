package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

func load(t *testing.T) (composeFile, image) {
	t.Helper()
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, err := readCompose(filepath.Join(root, "docker", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := readDockerfile(filepath.Join(root, "docker", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return c, img
}

// command is the image's ENTRYPOINT with the test's brook binary.
func command(t *testing.T, img image) (bin string, args []string) {
	if filepath.Base(img.entrypoint[0]) != "brook" {
		t.Fatalf("ENTRYPOINT %v does not run brook", img.entrypoint)
	}
	return testutil.BuildBrook(t), append(img.entrypoint[1:], "--log-level=debug")
}

func newNetwork(t *testing.T, zk string) *network {
	return &network{ports: map[string]int{}, free: func() int { return testutil.FreePort(t) }, zk: zk}
}

// healthcheck runs the image's HEALTHCHECK command, brook healthcheck.
func healthcheck(bin, addr string) error {
	out, err := exec.Command(bin, "healthcheck", addr).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// TestComposeCluster runs the compose file's ZooKeeper cluster: three
// brokers from their command and environment, which must form one cluster
// with the compose file's replication settings, serve metrics on their
// metrics listener, log JSON and pass the image's healthcheck.
func TestComposeCluster(t *testing.T) {
	c, img := load(t)
	var names []string
	for name, s := range c.Services {
		if strings.HasPrefix(name, "brook-") && len(s.Profiles) == 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) != 3 {
		t.Fatalf("compose file has brokers %v, want three", names)
	}
	zk := testutil.StartZooKeeper(t)
	net := newNetwork(t, zk.Connect())
	bin, args := command(t, img)
	procs := map[string]*testutil.Process{}
	metricsAddr := map[string]string{}
	// Clients on the host use the EXTERNAL listener (localhost:19092).
	external := fmt.Sprintf("127.0.0.1:%d", net.port("brook-1", "19092"))
	cl := testutil.Client(t, external, kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One broker at a time, each seen by the cluster before the next
	// starts, as compose's depends_on would not guarantee but a test of
	// the configs (not of start-up races) wants.
	for i, name := range names {
		env := net.hostEnv(img, name, c.Services, filepath.Join(t.TempDir(), "data"))
		port := net.port(name, "9092")
		metricsAddr[name] = fmt.Sprintf("127.0.0.1:%d", net.port(name, "9404"))
		procs[name] = testutil.StartBrookCommand(t, bin, args, env, port)
		testutil.Eventually(t, 2*time.Minute, func() error {
			// A new client each time: franz-go answers a Metadata
			// request from what it has cached.
			fresh, err := kgo.NewClient(kgo.SeedBrokers(external))
			if err != nil {
				return err
			}
			defer fresh.Close()
			meta, err := kadm.NewClient(fresh).BrokerMetadata(ctx)
			if err != nil {
				return err
			}
			if len(meta.Brokers) != i+1 {
				return fmt.Errorf("%d brokers registered after starting %s", len(meta.Brokers), name)
			}
			return nil
		})
	}
	// default.replication.factor=3 and min.insync.replicas=2 come from
	// the compose environment.
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "compose"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	var details kadm.TopicDetails
	testutil.Eventually(t, 2*time.Minute, func() error {
		var err error
		if details, err = adm.ListTopics(ctx, "compose"); err != nil {
			return err
		}
		for _, p := range details["compose"].Partitions {
			if len(p.Replicas) != 3 || len(p.ISR) != 3 || p.Leader < 0 {
				return fmt.Errorf("partition %d: replicas %v isr %v leader %d", p.Partition, p.Replicas, p.ISR, p.Leader)
			}
		}
		return nil
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "compose", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce acks=all: %v", err)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "compose")
	if err != nil || len(cfgs) != 1 || cfgs[0].Err != nil {
		t.Fatalf("describe topic configs: %v %v", err, cfgs)
	}
	for _, cfg := range cfgs[0].Configs {
		if cfg.Key == "min.insync.replicas" && cfg.MaybeValue() != "2" {
			t.Errorf("min.insync.replicas = %s, want the compose file's 2", cfg.MaybeValue())
		}
	}

	active := 0.0
	for _, name := range names {
		s := testutil.MustScrape(t, metricsAddr[name])
		v, ok := s.Value("kafka_controller_kafkacontroller_activecontrollercount")
		if !ok {
			t.Errorf("%s: no activecontrollercount on its metrics listener", name)
		}
		active += v
		if n, _ := s.Value("kafka_server_replicamanager_partitioncount"); n < 2 {
			t.Errorf("%s hosts %v partitions, want the two of a topic replicated on all three", name, n)
		}
		if err := healthcheck(bin, procs[name].Addr()); err != nil {
			t.Errorf("%s: healthcheck: %v", name, err)
		}
	}
	if active != 1 {
		t.Errorf("%v active controllers over the cluster, want 1", active)
	}
	// KAFKA_CFG_BROOK_LOG_FORMAT=json: every line the broker writes after
	// the test's marker is a JSON object.
	data, err := os.ReadFile(procs["brook-1"].LogPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "=== testutil") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["logger"] == nil {
			t.Errorf("brook-1 log line is no JSON record with a logger: %q", line)
			break
		}
		lines++
	}
	if lines == 0 {
		t.Errorf("brook-1 logged nothing")
	}

	if err := procs["brook-3"].Stop(); err != nil {
		t.Errorf("stop brook-3: %v", err)
	}
	if err := healthcheck(bin, procs["brook-3"].Addr()); err == nil {
		t.Errorf("healthcheck passed for a stopped broker")
	}
}

// TestComposeSingle runs the compose file's one-node service: the
// embedded metadata store, no ZooKeeper.
func TestComposeSingle(t *testing.T) {
	c, img := load(t)
	s, ok := c.Services["single"]
	if !ok || !slices.Contains(s.Profiles, "single") {
		t.Fatalf("compose file has no single service under the single profile")
	}
	for k := range s.Environment {
		if strings.Contains(k, "ZOOKEEPER") {
			t.Fatalf("the single service sets %s", k)
		}
	}
	net := newNetwork(t, "")
	bin, args := command(t, img)
	env := net.hostEnv(img, "single", c.Services, filepath.Join(t.TempDir(), "data"))
	p := testutil.StartBrookCommand(t, bin, args, env, net.port("single", "9092"))
	cl := testutil.Client(t, p.Addr(), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "single", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	scrape := testutil.MustScrape(t, fmt.Sprintf("127.0.0.1:%d", net.port("single", "9404")))
	if v, _ := scrape.Value("kafka_server_brokertopicmetrics_messagesin_total", "topic", "single"); v != 1 {
		t.Errorf("messagesin for topic single = %v, want 1", v)
	}
	if err := healthcheck(bin, p.Addr()); err != nil {
		t.Errorf("healthcheck: %v", err)
	}
}
