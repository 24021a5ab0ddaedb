package scale

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rss is pid's resident set size now (VmRSS), in bytes.
func rss(b testing.TB, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("read status of pid %d: %v", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				b.Fatalf("VmRSS line %q: %v", sc.Text(), err)
			}
			return kb << 10
		}
	}
	b.Fatalf("pid %d: no VmRSS", pid)
	return 0
}

// cpu is the CPU time (user + system) pid used so far; /proc/PID/stat
// counts in USER_HZ (100 on Linux) ticks.
func cpu(b testing.TB, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("read stat of pid %d: %v", pid, err)
	}
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatalf("stat of pid %d: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// openFiles is how many descriptors pid holds.
func openFiles(b testing.TB, pid int) int {
	b.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatalf("list fds of pid %d: %v", pid, err)
	}
	return len(fds)
}

// loadavg is the 1-minute load average, for the report.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}

// report prints one figure in a fixed format that docs/benchmarks.md quotes.
func report(b *testing.B, name string, value float64, unit string) {
	b.Helper()
	fmt.Printf("scale: %-48s %12.3f %s  (load %s)\n", name, value, unit, loadavg())
	b.ReportMetric(value, strings.ReplaceAll(unit, " ", "_")+"/"+name)
}

// percentile is the p-th percentile (0..100) of ds, which it sorts.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds)-1) * p / 100)
	return ds[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(n int64) float64 { return float64(n) / (1 << 20) }
