package kafkapython

import (
	"bytes"
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

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// scriptTimeout bounds one run of the scenario script; its own waits are
// 60 s each.
const scriptTimeout = 4 * time.Minute

// codecs are kafka-python's compression types; deps.sh installs the
// packages for lz4, snappy and zstd, so each one must work.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// The script's group layout (GROUP_* in testdata/scenario.py).
const (
	groupTopic      = "py-group"
	groupPartitions = 4
	perPartition    = 5
	codecRecords    = 50
)

// report is what testdata/scenario.py prints.
type report struct {
	KafkaPython     string          `json:"kafka_python"`
	APIVersion      []int           `json:"api_version"`
	CodecsAvailable map[string]bool `json:"codecs_available"`
	Codecs          map[string]struct {
		Acks [][2]int64 `json:"acks"`
		Read [][]struct {
			Offset  int64       `json:"offset"`
			Key     string      `json:"key"`
			Value   string      `json:"value"`
			Headers [][2]string `json:"headers"`
		} `json:"read"`
	} `json:"codecs"`
	Members map[string]struct {
		Assignment []int    `json:"assignment"`
		Records    [][3]any `json:"records"`
	} `json:"members"`
	SecondRunBeforeNew [][3]any         `json:"second_run_before_new"`
	SecondRun          [][3]any         `json:"second_run"`
	GroupOffsets       map[string]int64 `json:"group_offsets"`
	Groups             []string         `json:"groups"`
}

// python is the venv's interpreter; a missing venv fails the test, since
// make deps installs it.
func python(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("BROOK_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("home dir: %v", err)
		}
		cache = filepath.Join(home, ".cache", "brook")
	}
	py := filepath.Join(cache, "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("kafka-python venv missing (%v): run scripts/deps.sh --python", err)
	}
	return py
}

// runScenario runs the script against env's broker and decodes its report.
func runScenario(t *testing.T, env *harness.Env) *report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	args := append([]string{filepath.Join("testdata", "scenario.py"), env.Addr()}, codecs...)
	cmd := exec.CommandContext(ctx, python(t), args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		env.Fatalf(stdout.String(), stderr.String(), "scenario.py: %v", err)
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		env.Fatalf(stdout.String(), stderr.String(), "scenario.py report: %v", err)
	}
	t.Logf("kafka-python %s, broker version guessed from ApiVersions: %v", r.KafkaPython, r.APIVersion)
	return &r
}

func TestKafkaPython(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	r := runScenario(t, env)
	if !strings.HasPrefix(r.KafkaPython, "2.") {
		t.Errorf("kafka-python %s, want a 2.x release", r.KafkaPython)
	}
	// kafka-python picks request versions from its guess. Its 2.x guesses
	// 2.4 from Produce v8, 2.5 from DescribeAcls v2, and needs
	// DescribeClientQuotas for 2.6, which Brook does not serve; so 2.5 is
	// what it sees, and anything below 2.4 means Brook lost a version.
	if len(r.APIVersion) < 2 || slices.Compare(r.APIVersion[:2], []int{2, 4}) < 0 {
		t.Errorf("kafka-python guessed broker version %v, want >= 2.4", r.APIVersion)
	}
	t.Run("codecs", func(t *testing.T) { checkCodecs(t, r) })
	t.Run("group", func(t *testing.T) { checkGroup(t, r) })
}

func checkCodecs(t *testing.T, r *report) {
	for _, c := range codecs[1:] {
		if !r.CodecsAvailable[c] {
			t.Errorf("kafka-python reports no %s support: its package is not in the venv", c)
		}
	}
	for _, c := range codecs {
		got, ok := r.Codecs[c]
		if !ok {
			t.Errorf("%s: not in the report", c)
			continue
		}
		// Record i went to partition i%2: offsets per partition count up from 0.
		for i, a := range got.Acks {
			if want := [2]int64{int64(i % 2), int64(i / 2)}; a != want {
				t.Errorf("%s: record %d acked at partition/offset %v, want %v", c, i, a, want)
			}
		}
		if len(got.Acks) != codecRecords {
			t.Errorf("%s: %d acks, want %d", c, len(got.Acks), codecRecords)
		}
		for p, recs := range got.Read {
			if len(recs) != codecRecords/2 {
				t.Errorf("%s partition %d: read %d records, want %d", c, p, len(recs), codecRecords/2)
			}
			for j, rec := range recs {
				i := 2*j + p
				wantVal := fmt.Sprintf("%s-%d-%s", c, i, strings.Repeat("x", 200))
				wantHdr := [][2]string{{"seq", fmt.Sprint(i)}, {"codec", c}}
				if rec.Offset != int64(j) || rec.Key != fmt.Sprintf("k%d", i) || rec.Value != wantVal || !slices.Equal(rec.Headers, wantHdr) {
					t.Errorf("%s partition %d record %d: offset %d key %q headers %v value %.30q..., want %d k%d %v %.30q...",
						c, p, j, rec.Offset, rec.Key, rec.Headers, rec.Value, j, i, wantHdr, wantVal)
				}
			}
		}
	}
}

func checkGroup(t *testing.T, r *report) {
	if len(r.Members) != 2 {
		t.Fatalf("members %v, want a and b", r.Members)
	}
	// The two members split the partitions, and each read exactly the
	// records of its own partitions, each once.
	seen := map[string]string{}
	var all []int
	for name, m := range r.Members {
		if len(m.Assignment) == 0 {
			t.Errorf("member %s got no partitions", name)
		}
		all = append(all, m.Assignment...)
		for _, rec := range m.Records {
			p, off, val := int(rec[0].(float64)), int(rec[1].(float64)), rec[2].(string)
			if !slices.Contains(m.Assignment, p) {
				t.Errorf("member %s read %d/%d outside its partitions %v", name, p, off, m.Assignment)
			}
			if want := fmt.Sprintf("%d-%d", p, off); val != want {
				t.Errorf("member %s: %d/%d holds %q, want %q", name, p, off, val, want)
			}
			key := fmt.Sprintf("%d/%d", p, off)
			if prev, dup := seen[key]; dup {
				t.Errorf("record %s read twice (by %s and %s)", key, prev, name)
			}
			seen[key] = name
		}
	}
	slices.Sort(all)
	if want := []int{0, 1, 2, 3}; !slices.Equal(all, want) {
		t.Errorf("assignments together %v, want %v", all, want)
	}
	if len(seen) != groupPartitions*perPartition {
		t.Errorf("group read %d distinct records, want %d", len(seen), groupPartitions*perPartition)
	}

	if len(r.SecondRunBeforeNew) != 0 {
		t.Errorf("second run of the group re-read committed records: %v", r.SecondRunBeforeNew)
	}
	if len(r.SecondRun) != 1 || r.SecondRun[0][2] != "late" || r.SecondRun[0][1].(float64) != perPartition {
		t.Errorf("second run read %v, want only [1 %d late]", r.SecondRun, perPartition)
	}

	// The second run committed the late record on partition 1.
	want := map[string]int64{}
	for p := range groupPartitions {
		want[fmt.Sprintf("%s/%d", groupTopic, p)] = perPartition
	}
	want[groupTopic+"/1"] = perPartition + 1
	if !mapsEqual(r.GroupOffsets, want) {
		t.Errorf("list_consumer_group_offsets %v, want %v", r.GroupOffsets, want)
	}
	if !slices.Contains(r.Groups, "py-group-g") {
		t.Errorf("list_consumer_groups %v lacks py-group-g", r.Groups)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
