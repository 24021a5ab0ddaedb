package kafkatools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// clientConfig writes a Java client's SASL settings for mechanism as a
// --command-config file.
func clientConfig(t *testing.T, mechanism, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), strings.ToLower(mechanism)+".properties")
	if err := os.WriteFile(path, []byte(harness.JavaClientProperties(mechanism)+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSASLTools runs kafka-topics (--command-config), the console
// producer and the console consumer over SASL_PLAINTEXT with each
// mechanism (one without harness.SASLFull), with Kafka 4.x's tools.
func TestSASLTools(t *testing.T) {
	env := harness.StartSASL(t, brookBin, nil)
	for _, mech := range harness.JavaToolMechanisms() {
		t.Run(mech, func(t *testing.T) {
			toolsRoundTrip(env.Env, env.SASLAddr, clientConfig(t, mech, ""), mech, "compat-sasl-"+strings.ToLower(mech))
		})
	}
	if !harness.SASLFull() {
		return
	}
	t.Run("wrong password", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.properties")
		bad := strings.Replace(harness.JavaClientProperties("SCRAM-SHA-256"), harness.ScramPassword, "wrong", 1)
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := testutil.KafkaTool(t, "kafka-topics.sh", "--bootstrap-server", env.SASLAddr, "--command-config", path, "--list")
		if err == nil || !strings.Contains(out+errOut, "SaslAuthenticationException") {
			env.Errorf(out, errOut, "kafka-topics with a wrong password: %v, want a SaslAuthenticationException", err)
		}
	})
}

// toolsRoundTrip creates topic with kafka-topics, produces a record with
// the console producer and reads it with the console consumer, each with
// --command-config cfg against addr.
func toolsRoundTrip(env *harness.Env, addr, cfg, mech, topic string) {
	env.T.Helper()
	env.Tool("kafka-topics.sh", "--bootstrap-server", addr, "--command-config", cfg, "--create", "--topic", topic, "--partitions", "1")
	env.ToolStdin(strings.NewReader("hello "+mech+"\n"), "kafka-console-producer.sh",
		"--bootstrap-server", addr, "--command-config", cfg, "--topic", topic)
	out, errOut := env.Tool("kafka-console-consumer.sh", "--bootstrap-server", addr, "--command-config", cfg,
		"--topic", topic, "--from-beginning", "--max-messages", "1", "--timeout-ms", "60000")
	if !strings.Contains(out, "hello "+mech) {
		env.Errorf(out, errOut, "console consumer over %s at %s: record not read", mech, addr)
	}
}

// TestSASLConfigsScram creates SCRAM credentials with kafka-configs
// --bootstrap-server (AlterUserScramCredentials), describes them, and
// authenticates with them, with each release's tools (Kafka 4.x's only
// without harness.SASLFull).
func TestSASLConfigsScram(t *testing.T) {
	harness.ForEachReleaseSASL(t, brookBin, nil, func(t *testing.T, env *harness.SASLEnv) {
		env.Tool("kafka-configs.sh", "--bootstrap-server", env.Addr(), "--alter", "--entity-type", "users", "--entity-name", "carol",
			"--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret],SCRAM-SHA-512=[password=carol-secret]")
		out, errOut := env.Tool("kafka-configs.sh", "--bootstrap-server", env.Addr(), "--describe", "--entity-type", "users", "--entity-name", "carol")
		if want := "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"; !strings.Contains(out, want) {
			env.Errorf(out, errOut, "kafka-configs --describe: want %q", want)
		}
		if !harness.SASLFull() {
			return // authenticating with such a credential: TestSASLConfigsZooKeeper
		}
		cfg := filepath.Join(t.TempDir(), "carol.properties")
		props := strings.NewReplacer(`username="`+harness.ScramUser+`"`, `username="carol"`, `password="`+harness.ScramPassword+`"`, `password="carol-secret"`).
			Replace(harness.JavaClientProperties("SCRAM-SHA-256"))
		if err := os.WriteFile(cfg, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		env.Tool("kafka-topics.sh", "--bootstrap-server", env.SASLAddr, "--command-config", cfg, "--list")
		env.Tool("kafka-configs.sh", "--bootstrap-server", env.Addr(), "--alter", "--entity-type", "users", "--entity-name", "carol", "--delete-config", "SCRAM-SHA-256")
		out, errOut = env.Tool("kafka-configs.sh", "--bootstrap-server", env.Addr(), "--describe", "--entity-type", "users", "--entity-name", "carol")
		if !strings.Contains(out, "are SCRAM-SHA-512=iterations=4096") || strings.Contains(out, "SCRAM-SHA-256") {
			env.Errorf(out, errOut, "kafka-configs --describe after --delete-config SCRAM-SHA-256")
		}
	})
}

// TestSASLConfigsZooKeeper writes a SCRAM credential with Kafka 3.9's
// kafka-configs --zookeeper, straight into ZooKeeper (the user's config
// node and a /config/changes notification), and authenticates with it at
// a Brook in ZooKeeper mode: credentials made by Kafka's own tools work.
func TestSASLConfigsZooKeeper(t *testing.T) {
	zk := testutil.StartZooKeeper(t)
	env := harness.StartSASL(t, brookBin, map[string]string{"zookeeper.connect": zk.Connect()})
	home, err := harness.Kafka39.Home()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROOK_KAFKA_HOME", home)
	env.Release = harness.Kafka39
	env.Tool("kafka-configs.sh", "--zookeeper", zk.Connect(), "--alter", "--entity-type", "users", "--entity-name", "zed",
		"--add-config", "SCRAM-SHA-512=[password=zed-secret]")
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.SASLAddr), kgo.SASL(scram.Auth{User: "zed", Pass: "zed-secret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("authenticate with the credential kafka-configs --zookeeper wrote: %v\n%s", err, env.Report("", ""))
	}
	if !harness.SASLFull() {
		return
	}
	out, errOut := env.Tool("kafka-configs.sh", "--bootstrap-server", env.Addr(), "--describe", "--entity-type", "users", "--entity-name", "zed")
	if !strings.Contains(out, "SCRAM-SHA-512=iterations=4096") {
		env.Errorf(out, errOut, "describe over Brook of the credential written to ZooKeeper")
	}
}
