package kafkatools

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// groupRow is one partition line of kafka-consumer-groups --describe or
// --reset-offsets: column name -> value.
type groupRow map[string]string

// parseTable reads the tools' whitespace-aligned tables: a header line
// starting with GROUP, then one row per partition, keyed by partition.
// Kafka 3.9's --reset-offsets prints its rows on the header's line with no
// line breaks, so a line holding several rows' worth of fields is cut into
// rows of the header's width.
func parseTable(out string) map[string]groupRow {
	rows := map[string]groupRow{}
	var header []string
	for _, line := range harness.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "GROUP" {
			n := 0
			for n < len(f) && isColumnName(f[n]) {
				n++
			}
			header, f = f[:n], f[n:]
		}
		for header != nil && len(f) >= len(header) {
			row := groupRow{}
			for i, h := range header {
				row[h] = f[i]
			}
			rows[row["PARTITION"]] = row
			f = f[len(header):]
		}
	}
	return rows
}

// isColumnName reports a table header word such as LOG-END-OFFSET.
func isColumnName(s string) bool {
	return strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-") == ""
}

func TestConsumerGroups(t *testing.T) {
	harness.ForEachRelease(t, brookBin, nil, consumerGroupsScenario)
}

func consumerGroupsScenario(t *testing.T, env *harness.Env) {
	const topic, group = "compat-groups", "compat-groups-g"
	bs := []string{"--bootstrap-server", env.Addr()}
	createTopic(env, topic, 2)
	counts := []int{6, 4}
	produceCounts(t, env.Addr(), topic, counts)

	// expectDescribe checks CURRENT-OFFSET, LOG-END-OFFSET and LAG per partition.
	expectDescribe := func(current []int) {
		t.Helper()
		out, errOut := env.Tool("kafka-consumer-groups.sh", append(bs, "--describe", "--group", group)...)
		rows := parseTable(out)
		for p, c := range current {
			row := rows[strconv.Itoa(p)]
			got := [4]string{row["TOPIC"], row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"]}
			want := [4]string{topic, strconv.Itoa(c), strconv.Itoa(counts[p]), strconv.Itoa(counts[p] - c)}
			if got != want {
				env.Errorf(out, errOut, "--describe partition %d: TOPIC/CURRENT/LOG-END/LAG = %v, want %v", p, got, want)
			}
		}
	}
	reset := func(execute bool, args ...string) map[string]groupRow {
		t.Helper()
		all := append(append([]string{}, bs...), "--group", group, "--topic", topic, "--reset-offsets")
		all = append(all, args...)
		if execute {
			all = append(all, "--execute")
		} else {
			all = append(all, "--dry-run")
		}
		out, _ := env.Tool("kafka-consumer-groups.sh", all...)
		return parseTable(out)
	}
	expectNew := func(rows map[string]groupRow, want []int) {
		t.Helper()
		for p, w := range want {
			if got := rows[strconv.Itoa(p)]["NEW-OFFSET"]; got != strconv.Itoa(w) {
				t.Errorf("reset: partition %d NEW-OFFSET %q, want %d (rows %v)", p, got, w, rows)
			}
		}
	}

	// A consumer reads everything and commits as it closes.
	got, out, errOut := consume(env, topic, "--group", group, "--max-messages", "10")
	if len(got) != 10 {
		env.Fatalf(out, errOut, "consumed %d records, want 10", len(got))
	}
	out, errOut = env.Tool("kafka-consumer-groups.sh", append(bs, "--list")...)
	if !slices.Contains(harness.Lines(out), group) {
		env.Fatalf(out, errOut, "--list lacks %s", group)
	}
	expectDescribe([]int{6, 4})

	expectNew(reset(true, "--to-earliest"), []int{0, 0})
	expectDescribe([]int{0, 0})

	expectNew(reset(true, "--to-offset", "3"), []int{3, 3})
	expectDescribe([]int{3, 3})

	// A dry run reports the plan and changes nothing.
	expectNew(reset(false, "--to-latest"), []int{6, 4})
	expectDescribe([]int{3, 3})

	// The group resumes from the reset offsets: 3 + 1 records remain.
	got, out, errOut = consume(env, topic, "--group", group, "--max-messages", "4")
	want := []string{"k0-3\tv0-3", "k0-4\tv0-4", "k0-5\tv0-5", "k1-3\tv1-3"}
	var plain []string
	for _, l := range got {
		// Records produced by franz-go carry no headers.
		plain = append(plain, strings.TrimPrefix(l, "NO_HEADERS\t"))
	}
	if !sameSet(plain, want) {
		env.Fatalf(out, errOut, "after --to-offset 3: consumed %q, want %q in any order", plain, want)
	}
	expectDescribe([]int{6, 4})

	out, errOut = env.Tool("kafka-consumer-groups.sh", append(bs, "--delete", "--group", group)...)
	if !strings.Contains(out, "successful") {
		env.Fatalf(out, errOut, "--delete: no success message")
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		out, _, err := testutil.KafkaTool(t, "kafka-consumer-groups.sh", append(bs, "--list")...)
		if err != nil {
			return err
		}
		if slices.Contains(harness.Lines(out), group) {
			return errorf("--list still shows %s after --delete:\n%s", group, out)
		}
		return nil
	})
	out, errOut, err := testutil.KafkaTool(t, "kafka-consumer-groups.sh", append(bs, "--describe", "--group", group)...)
	if err == nil && !strings.Contains(out+errOut, "does not exist") {
		env.Errorf(out, errOut, "--describe of a deleted group: want \"does not exist\"")
	}
}
