package testutil

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// toolTimeout bounds one run of a command-line tool; the JVM alone takes a
// second or two to start on a busy 2-core machine.
const toolTimeout = 2 * time.Minute

// KafkaTool runs compat-tests/bin/<name> (e.g. "kafka-topics.sh") with args
// and returns its output. err is non-nil when the tool exits non-zero, cannot
// start, or runs past toolTimeout (it is then killed).
func KafkaTool(t testing.TB, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return KafkaToolStdin(t, nil, name, args...)
}

// KafkaToolStdin is KafkaTool with stdin fed from in (nil for none), for
// tools such as kafka-console-producer.sh that read records from stdin.
func KafkaToolStdin(t testing.TB, in io.Reader, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The wrappers exec java, so killing the started pid kills the tool.
	return runTool(filepath.Join(root, "compat-tests", "bin", name), in, args, nil)
}

// Kafka39Tool is KafkaTool with Kafka 3.9's tool jars (KafkaRelease
// "kafka3") instead of 4.x's, for what the 3.9 tools do differently (its
// kafka-reassign-partitions.sh, kafka-topics.sh as a 3.9 operator runs
// them).
func Kafka39Tool(t testing.TB, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "BROOK_KAFKA_HOME="+KafkaRelease(t, "kafka3"))
	return runTool(filepath.Join(root, "compat-tests", "bin", name), nil, args, env)
}

// Kcat runs kcat (librdkafka's command-line client, installed by
// scripts/deps.sh --kcat) with stdin fed from in (nil for none).
func Kcat(t testing.TB, in io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runTool("kcat", in, args, nil)
}

// runTool runs path; env nil means this process's environment.
func runTool(path string, in io.Reader, args []string, env []string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = in
	cmd.Env = env
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout = &outBuf
	cmd.Stderr = &errBuf
	err = cmd.Run()
	name := filepath.Base(path)
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out after %v: %w", name, toolTimeout, err)
	} else if err != nil {
		err = fmt.Errorf("%s %v: %w", name, args, err)
	}
	return outBuf.String(), errBuf.String(), err
}

// KafkaRelease is the cache directory of a Kafka release's tool jars, for
// BROOK_KAFKA_HOME: "kafka" (4.x, the wrappers' default) or "kafka3" (3.9).
func KafkaRelease(t testing.TB, name string) string {
	t.Helper()
	cache := os.Getenv("BROOK_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "brook")
	}
	return filepath.Join(cache, name)
}
