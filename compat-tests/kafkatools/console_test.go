package kafkatools

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// The console tools' separators, chosen so that a consumed line prints
// exactly as it was produced: "headers<TAB>key<TAB>value", headers being
// "k:v,k:v" (the tools' default header separators).
var (
	producerProps = []string{
		"--reader-property", "parse.key=true",
		"--reader-property", "key.separator=\t",
		"--reader-property", "parse.headers=true",
		"--reader-property", "headers.delimiter=\t",
	}
	consumerProps = []string{
		"--formatter-property", "print.key=true",
		"--formatter-property", "print.headers=true",
		"--formatter-property", "key.separator=\t",
		"--formatter-property", "headers.separator=,",
	}
)

// createTopic creates a topic with kafka-topics.
func createTopic(env *harness.Env, topic string, partitions int) {
	env.T.Helper()
	env.Tool("kafka-topics.sh", "--bootstrap-server", env.Addr(), "--create", "--topic", topic,
		"--partitions", strconv.Itoa(partitions), "--replication-factor", "1")
}

// produceLines sends lines through kafka-console-producer with acks=all.
func produceLines(env *harness.Env, topic string, lines []string) {
	env.T.Helper()
	args := append([]string{"--bootstrap-server", env.Addr(), "--topic", topic,
		"--command-property", "acks=all"}, producerProps...)
	env.ToolStdin(strings.NewReader(strings.Join(lines, "\n")+"\n"), "kafka-console-producer.sh", args...)
}

// consume runs kafka-console-consumer from the beginning with extra args and
// returns the printed records.
func consume(env *harness.Env, topic string, extra ...string) (records []string, stdout, stderr string) {
	env.T.Helper()
	args := append([]string{"--bootstrap-server", env.Addr(), "--topic", topic, "--from-beginning"}, consumerProps...)
	stdout, stderr = env.Tool("kafka-console-consumer.sh", append(args, extra...)...)
	return harness.Lines(stdout), stdout, stderr
}

func TestConsoleKeysHeadersTimestamps(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-console"
	createTopic(env, topic, 1)
	input := []string{
		"trace:abc,span:1\tuser-1\thello world",
		"h:ü\tkey two\tvalue:with:colons",
		"a:1,b:2,c:3\tk3\t{\"json\": true, \"n\": [1, 2]}",
		"empty:\tk4\tv4",
		"x:y\tk5\t" + strings.Repeat("long value ", 500),
	}
	before := time.Now().UnixMilli()
	produceLines(env, topic, input)
	after := time.Now().UnixMilli()

	got, out, errOut := consume(env, topic, "--max-messages", strconv.Itoa(len(input)),
		"--formatter-property", "print.timestamp=true")
	if len(got) != len(input) {
		env.Fatalf(out, errOut, "consumed %d lines, want %d", len(got), len(input))
	}
	for i, line := range got {
		ts, rest, ok := strings.Cut(line, "\t")
		ms, err := strconv.ParseInt(strings.TrimPrefix(ts, "CreateTime:"), 10, 64)
		if !ok || !strings.HasPrefix(ts, "CreateTime:") || err != nil {
			env.Errorf(out, errOut, "line %d: %q does not start with CreateTime:<ms><TAB>", i, line)
			continue
		}
		// The producer stamps CreateTime from the same clock between the two reads.
		if ms < before || ms > after {
			env.Errorf(out, errOut, "line %d: CreateTime %d outside the produce window [%d, %d]", i, ms, before, after)
		}
		if rest != input[i] {
			env.Errorf(out, errOut, "line %d:\n got %q\nwant %q", i, rest, input[i])
		}
	}
}

func TestConsoleGroupCommits(t *testing.T) {
	harness.ForEachRelease(t, brookBin, nil, consoleGroupCommitsScenario)
}

func consoleGroupCommitsScenario(t *testing.T, env *harness.Env) {
	const topic, group = "compat-console-group", "compat-console-g"
	createTopic(env, topic, 3)
	first := []string{"h:1\tk1\tv1", "h:2\tk2\tv2", "h:3\tk3\tv3", "h:4\tk4\tv4"}
	produceLines(env, topic, first)

	// With three partitions only the set is fixed, not the order.
	got, out, errOut := consume(env, topic, "--group", group, "--max-messages", strconv.Itoa(len(first)))
	if !sameSet(got, first) {
		env.Fatalf(out, errOut, "first run with --group: got %q, want %q in any order", got, first)
	}

	// Everything is committed: a second run finds nothing and times out.
	got, out, errOut = consume(env, topic, "--group", group, "--timeout-ms", "3000")
	if len(got) != 0 {
		env.Fatalf(out, errOut, "second run with --group re-read committed records: %q", got)
	}
	if !strings.Contains(errOut, "Processed a total of 0 messages") {
		env.Fatalf(out, errOut, "second run: want \"Processed a total of 0 messages\"")
	}

	// New records are all the group reads next.
	second := []string{"h:5\tk5\tv5", "h:6\tk6\tv6"}
	produceLines(env, topic, second)
	got, out, errOut = consume(env, topic, "--group", group, "--max-messages", strconv.Itoa(len(second)))
	if !sameSet(got, second) {
		env.Fatalf(out, errOut, "third run with --group: got %q, want only the new %q", got, second)
	}
}

// sameSet reports whether a and b hold the same lines, each once.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] != 1 {
			return false
		}
		seen[s] = 0
	}
	return true
}
