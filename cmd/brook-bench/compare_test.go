package main

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// naiveMedian returns the smallest x with at least half of xs at or below
// it: the nearest-rank p50, found by counting.
func naiveMedian(xs []float64) float64 {
	best, found := 0.0, false
	for _, c := range xs {
		n := 0
		for _, x := range xs {
			if x <= c {
				n++
			}
		}
		if 2*n >= len(xs) && (!found || c < best) {
			best, found = c, true
		}
	}
	return best
}

func TestMedianMatchesNaiveModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 500; trial++ {
		xs := make([]float64, 1+rng.IntN(9))
		for i := range xs {
			xs[i] = float64(rng.IntN(20))
		}
		orig := slices.Clone(xs)
		if got, want := median(xs), naiveMedian(xs); got != want {
			t.Fatalf("median(%v) = %v, naive = %v", xs, got, want)
		}
		if !slices.Equal(xs, orig) {
			t.Fatal("median reordered its input")
		}
	}
	if median(nil) != 0 {
		t.Error("median of nothing should be 0")
	}
}

func TestRowVerdict(t *testing.T) {
	f := func(v float64) string { return time.Duration(v).String() }
	tests := []struct {
		name                  string
		r                     row
		wantRatio, wantTarget string
		wantMet               string
	}{
		{"throughput met", row{values: map[string]float64{"brook": 300, "kafka": 100}, format: f, dir: higherIsBetter, target: 1.5}, "3.00x", ">= 1.50x", "yes"},
		{"throughput missed", row{values: map[string]float64{"brook": 140, "kafka": 100}, format: f, dir: higherIsBetter, target: 1.5}, "1.40x", ">= 1.50x", "no"},
		{"latency met", row{values: map[string]float64{"brook": 10, "kafka": 40}, format: f, dir: lowerIsBetter, target: 1.0 / 3}, "0.25x", "<= 0.33x", "yes"},
		{"latency missed", row{values: map[string]float64{"brook": 20, "kafka": 40}, format: f, dir: lowerIsBetter, target: 1.0 / 3}, "0.50x", "<= 0.33x", "no"},
		{"no target", row{values: map[string]float64{"brook": 20, "kafka": 40}, format: f, dir: lowerIsBetter}, "0.50x", "-", "-"},
		{"brook only", row{values: map[string]float64{"brook": 20}, format: f, dir: lowerIsBetter, target: 0.1}, "-", "-", "-"},
		{"kafka zero", row{values: map[string]float64{"brook": 20, "kafka": 0}, format: f, dir: lowerIsBetter, target: 0.1}, "-", "-", "-"},
		{"absolute met", row{values: map[string]float64{"brook": float64(30 * time.Millisecond)}, format: f, dir: lowerIsBetter, absTarget: float64(50 * time.Millisecond)}, "-", "< 50ms", "yes"},
		{"absolute missed", row{values: map[string]float64{"brook": float64(80 * time.Millisecond), "kafka": float64(4 * time.Second)}, format: f, dir: lowerIsBetter, absTarget: float64(50 * time.Millisecond)}, "0.02x", "< 50ms", "no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ratio, target, met := tt.r.verdict()
			if ratio != tt.wantRatio || target != tt.wantTarget || met != tt.wantMet {
				t.Errorf("verdict = %q %q %q, want %q %q %q", ratio, target, met, tt.wantRatio, tt.wantTarget, tt.wantMet)
			}
		})
	}
}

func TestBuildRowsTakesMediansPerServer(t *testing.T) {
	mk := func(produce float64, p99 time.Duration, rss int64, cold time.Duration) serverRun {
		return serverRun{coldStart: cold, peakRSS: rss, byAcks: map[string]runSummary{
			"1": {produceMBps: produce, consumeMBps: 2 * produce, p50: p99 / 4, p99: p99},
		}}
	}
	runs := map[string][]serverRun{
		"brook": {mk(300, 9*time.Millisecond, 30<<20, 40*time.Millisecond), mk(100, 3*time.Millisecond, 10<<20, 20*time.Millisecond), mk(200, 6*time.Millisecond, 20<<20, 30*time.Millisecond)},
		"kafka": {mk(50, 60*time.Millisecond, 400<<20, 4*time.Second), mk(150, 20*time.Millisecond, 500<<20, 5*time.Second), mk(100, 40*time.Millisecond, 450<<20, 3*time.Second)},
	}
	rows := buildRows([]string{"1"}, nil, false, runs)
	byMetric := map[string]row{}
	for _, r := range rows {
		byMetric[r.metric] = r
	}
	checks := []struct {
		metric       string
		brook, kafka float64
	}{
		{"acks=1 produce", 200, 100},
		{"acks=1 consume", 400, 200},
		{"acks=1 p99 end-to-end", float64(6 * time.Millisecond), float64(40 * time.Millisecond)},
		{"peak RSS (VmHWM)", 20 << 20, 450 << 20},
		{"cold start", float64(30 * time.Millisecond), float64(4 * time.Second)},
	}
	for _, c := range checks {
		r, ok := byMetric[c.metric]
		if !ok {
			t.Fatalf("no row %q in %v", c.metric, rows)
		}
		if r.values["brook"] != c.brook || r.values["kafka"] != c.kafka {
			t.Errorf("%s: brook %v kafka %v, want %v and %v", c.metric, r.values["brook"], r.values["kafka"], c.brook, c.kafka)
		}
	}

	var sb strings.Builder
	printTable(&sb, rows, false)
	lines := strings.Split(strings.TrimSpace(sb.String()), "\n")
	if len(lines) != 2+len(rows) {
		t.Fatalf("table has %d lines, want header, rule and %d rows:\n%s", len(lines), len(rows), sb.String())
	}
	for _, want := range []string{"| acks=1 produce | 200.0 MB/s | 100.0 MB/s | 2.00x | >= 1.50x | yes |", "| cold start | 30ms | 4s | 0.01x | < 50ms | yes |"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
}

// TestBuildRowsTxnCommitLatency: the transactional workload's rows carry
// the median over runs of each run's commit p50 and p99, and only that
// workload has them.
func TestBuildRowsTxnCommitLatency(t *testing.T) {
	mk := func(p99 time.Duration) serverRun {
		return serverRun{byAcks: map[string]runSummary{
			"1":     {produceMBps: 100},
			acksTxn: {produceMBps: 90, commitP50: p99 / 2, commitP99: p99},
		}}
	}
	runs := map[string][]serverRun{
		"brook": {mk(9 * time.Millisecond), mk(3 * time.Millisecond), mk(6 * time.Millisecond)},
		"kafka": {mk(30 * time.Millisecond), mk(10 * time.Millisecond), mk(20 * time.Millisecond)},
	}
	byMetric := map[string]row{}
	for _, r := range buildRows([]string{"1", acksTxn}, nil, false, runs) {
		byMetric[r.metric] = r
	}
	if r := byMetric["acks=txn p99 commit"]; r.values["brook"] != float64(6*time.Millisecond) || r.values["kafka"] != float64(20*time.Millisecond) {
		t.Errorf("txn p99 commit row %+v, want brook 6ms and kafka 20ms", r.values)
	}
	if r := byMetric["acks=txn p50 commit"]; r.values["brook"] != float64(3*time.Millisecond) {
		t.Errorf("txn p50 commit row %+v, want brook 3ms", r.values)
	}
	if r, ok := byMetric["acks=txn produce"]; !ok || r.target != 1.5 {
		t.Errorf("txn produce row %+v, want a 1.5x target", r)
	}
	if _, ok := byMetric["acks=1 p99 commit"]; ok {
		t.Error("acks=1 has a commit row")
	}
}

// TestProduceOnlyShowsNoConsume checks that a --produce-only run, which
// consumes nothing, shows no consume or end-to-end figures (zeros) in the
// table or in a run's own lines.
func TestProduceOnlyShowsNoConsume(t *testing.T) {
	runs := map[string][]serverRun{"brook": {{byAcks: map[string]runSummary{"1": {produceMBps: 100}}}}}
	var metrics []string
	for _, r := range buildRows([]string{"1"}, nil, true, runs) {
		metrics = append(metrics, r.metric)
	}
	if !slices.Contains(metrics, "acks=1 produce") || !slices.Contains(metrics, "acks=1 broker CPU time") {
		t.Errorf("produce-only rows %q lack the produce rows", metrics)
	}
	for _, m := range metrics {
		if strings.Contains(m, "consume") || strings.Contains(m, "end-to-end") {
			t.Errorf("produce-only table has row %q", m)
		}
	}
	var out strings.Builder
	result{acks: "1", produceOnly: true}.print(&out)
	if s := out.String(); strings.Contains(s, "consume from beginning") || strings.Contains(s, "end-to-end") {
		t.Errorf("a produce-only run prints:\n%s", s)
	}
}
