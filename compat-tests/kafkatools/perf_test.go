package kafkatools

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// perfRecords is the size for the perf tools: 100,000 records.
const perfRecords = 100000

// errorWords mark a problem in a tool's output even when it exits 0.
var errorWords = regexp.MustCompile(`(?i)\b(ERROR|Exception)\b`)

func TestPerfTools(t *testing.T) {
	harness.ForEachRelease(t, brookBin, nil, perfToolsScenario)
}

func perfToolsScenario(t *testing.T, env *harness.Env) {
	const topic = "compat-perf"
	createTopic(env, topic, 3)

	out, errOut := env.Tool("kafka-producer-perf-test.sh", "--topic", topic,
		"--num-records", strconv.Itoa(perfRecords), "--record-size", "100", "--throughput", "-1",
		// --command-property takes all its key=value pairs at once.
		"--command-property", "bootstrap.servers="+env.Addr(), "acks=all")
	harness.LogLines(t, "kafka-producer-perf-test", out)
	if errorWords.MatchString(out + errOut) {
		env.Errorf(out, errOut, "kafka-producer-perf-test reported errors")
	}
	summary := regexp.MustCompile(`(?m)^(\d+) records sent, `).FindAllStringSubmatch(out, -1)
	if len(summary) == 0 || summary[len(summary)-1][1] != strconv.Itoa(perfRecords) {
		env.Fatalf(out, errOut, "kafka-producer-perf-test: no final \"%d records sent\" line", perfRecords)
	}
	offsets := getOffsets(env, topic)
	total := 0
	for _, l := range offsets {
		n, err := strconv.Atoi(l[strings.LastIndex(l, ":")+1:])
		if err != nil {
			t.Fatalf("kafka-get-offsets line %q: %v", l, err)
		}
		total += n
	}
	if total != perfRecords {
		t.Fatalf("log end offsets %q sum to %d, want %d", offsets, total, perfRecords)
	}

	out, errOut = env.Tool("kafka-consumer-perf-test.sh", "--bootstrap-server", env.Addr(), "--topic", topic,
		"--num-records", strconv.Itoa(perfRecords), "--timeout", "60000")
	harness.LogLines(t, "kafka-consumer-perf-test", out)
	if errorWords.MatchString(out + errOut) {
		env.Errorf(out, errOut, "kafka-consumer-perf-test reported errors")
	}
	// The CSV line: start, end, MB, MB/s, nMsg, ...
	lines := harness.Lines(out)
	if len(lines) < 2 {
		env.Fatalf(out, errOut, "kafka-consumer-perf-test: no result line")
	}
	cols := strings.Split(lines[len(lines)-1], ", ")
	if len(cols) < 5 || cols[4] != strconv.Itoa(perfRecords) {
		env.Fatalf(out, errOut, "kafka-consumer-perf-test: data.consumed.in.nMsg is not %d", perfRecords)
	}
}
