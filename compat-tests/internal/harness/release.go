package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Release is an Apache Kafka release whose command-line tools the
// compat-tests/bin wrappers run: the name of its link under the cache
// (${BROOK_CACHE:-~/.cache/brook}) that scripts/deps.sh makes.
type Release string

const (
	// Kafka4 is the 4.x release (scripts/deps.sh --kafka), the wrappers'
	// default.
	Kafka4 Release = "kafka"
	// Kafka39 is Kafka 3.9 (scripts/deps.sh --kafka-3.9), the last release
	// with ZooKeeper mode, whose tools still send some older request
	// versions and use the Scala-side tool classes.
	Kafka39 Release = "kafka3"
)

// Releases are the releases a scenario that runs on every release covers,
// newest first.
func Releases() []Release { return []Release{Kafka4, Kafka39} }

// Home is the release's directory (its libs/ holds the jars).
func (r Release) Home() (string, error) {
	cache := os.Getenv("BROOK_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("kafka release %s: %w", r, err)
		}
		cache = filepath.Join(home, ".cache", "brook")
	}
	return filepath.Join(cache, string(r)), nil
}

// Name is the release's directory name, such as "kafka-3.9.2", which
// names subtests.
func (r Release) Name() string {
	home, err := r.Home()
	if err != nil {
		return string(r)
	}
	if target, err := filepath.EvalSymlinks(home); err == nil {
		return filepath.Base(target)
	}
	return string(r)
}

// deps is the scripts/deps.sh flag that installs r.
func (r Release) deps() string {
	if r == Kafka39 {
		return "--kafka-3.9"
	}
	return "--kafka"
}

// use points the tool wrappers at r for the rest of t (through
// BROOK_KAFKA_HOME, which they read), failing t if its jars are missing.
func (r Release) use(t *testing.T) {
	t.Helper()
	home, err := r.Home()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, ".complete")); err != nil {
		t.Fatalf("no Kafka tool jars for %s in %s: run scripts/deps.sh %s", r, home, r.deps())
	}
	t.Setenv("BROOK_KAFKA_HOME", home)
}

// ForEachRelease runs scenario once per release in Releases, each as a
// subtest named for the release with a broker of its own, started with
// overrides.
func ForEachRelease(t *testing.T, bin string, overrides map[string]string, scenario func(t *testing.T, env *Env)) {
	t.Helper()
	for _, r := range Releases() {
		t.Run(r.Name(), func(t *testing.T) {
			r.use(t)
			env := Start(t, bin, overrides)
			env.Release = r
			scenario(t, env)
		})
	}
}

// renamedFlags are options that Kafka 4.x's tools spell differently from
// 3.9's (KIP-1147 gave the console and perf tools consistent names), keyed
// by tool and 4.x name, with the 3.9 name.
var renamedFlags = map[[2]string]string{
	{"kafka-console-producer.sh", "--reader-property"}:    "--property",
	{"kafka-console-producer.sh", "--command-property"}:   "--producer-property",
	{"kafka-console-producer.sh", "--command-config"}:     "--producer.config",
	{"kafka-console-consumer.sh", "--formatter-property"}: "--property",
	{"kafka-console-consumer.sh", "--command-property"}:   "--consumer-property",
	{"kafka-console-consumer.sh", "--command-config"}:     "--consumer.config",
	{"kafka-producer-perf-test.sh", "--command-property"}: "--producer-props",
	{"kafka-producer-perf-test.sh", "--command-config"}:   "--producer.config",
	{"kafka-consumer-perf-test.sh", "--command-config"}:   "--consumer.config",
	{"kafka-consumer-perf-test.sh", "--num-records"}:      "--messages",
	{"kafka-verifiable-consumer.sh", "--command-config"}:  "--consumer.config",
}

// Args spells a 4.x command line of tool for r, so that one scenario
// serves every release.
func (r Release) Args(tool string, args []string) []string {
	if r != Kafka39 {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		if old, ok := renamedFlags[[2]string{tool, a}]; ok {
			a = old
		}
		out[i] = a
	}
	return out
}
