package main

import (
	"context"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

func TestParseConsumePasses(t *testing.T) {
	tests := []struct {
		in      string
		want    []consumePass
		wantErr bool
	}{
		{"franz-go:1", []consumePass{{clientFranzGo, 1}}, false},
		{"franz-go", []consumePass{{clientFranzGo, 1}}, false},
		{"franz-go:1,franz-go:4,kcat:4,perf:2", []consumePass{{clientFranzGo, 1}, {clientFranzGo, 4}, {clientKcat, 4}, {clientPerf, 2}}, false},
		{"kcat:3,franz-go:3", []consumePass{{clientKcat, 3}, {clientFranzGo, 3}}, false},
		{"franz-go:0", nil, true},
		{"franz-go:-2", nil, true},
		{"franz-go:x", nil, true},
		{"franz-go:", nil, true},
		{"sarama:2", nil, true},
		{"kcat:2,kcat:2", nil, true},
		{"franz-go,franz-go:1", nil, true},
		{"", nil, true},
		{"kcat:2,", nil, true},
	}
	for _, tt := range tests {
		got, err := parseConsumePasses(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("parseConsumePasses(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestPartitionSharesAreDisjointAndCover checks every split of up to 40
// partitions: each partition in exactly one share, shares within one of
// each other's size, none empty.
func TestPartitionSharesAreDisjointAndCover(t *testing.T) {
	for partitions := 1; partitions <= 40; partitions++ {
		for n := 1; n <= partitions; n++ {
			shares := partitionShares(partitions, n)
			if len(shares) != n {
				t.Fatalf("%d partitions, %d clients: %d shares", partitions, n, len(shares))
			}
			seen := make([]int, partitions)
			smallest, largest := partitions, 0
			for _, s := range shares {
				smallest, largest = min(smallest, len(s)), max(largest, len(s))
				for _, p := range s {
					seen[p]++
				}
			}
			for p, c := range seen {
				if c != 1 {
					t.Fatalf("%d partitions, %d clients: partition %d in %d shares (%v)", partitions, n, p, c, shares)
				}
			}
			if smallest == 0 || largest-smallest > 1 {
				t.Fatalf("%d partitions, %d clients: share sizes %d to %d (%v)", partitions, n, smallest, largest, shares)
			}
		}
	}
}

func TestParseFlagsConsume(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		want    []consumePass
	}{
		{"default", nil, false, []consumePass{{clientFranzGo, 1}}},
		{"several", []string{"--consume", "franz-go:4,kcat:2"}, false, []consumePass{{clientFranzGo, 4}, {clientKcat, 2}}},
		{"a client per partition", []string{"--partitions", "3", "--consume", "franz-go:3"}, false, []consumePass{{clientFranzGo, 3}}},
		{"more franz-go clients than partitions", []string{"--partitions", "3", "--consume", "franz-go:4"}, true, nil},
		// kcat reads every partition, so it may outnumber them.
		{"more kcat than partitions", []string{"--partitions", "3", "--consume", "kcat:4"}, false, []consumePass{{clientKcat, 4}}},
		{"split with txn", []string{"--acks", "1,txn", "--consume", "franz-go:2"}, true, nil},
		{"kcat with acks=0", []string{"--acks", "0", "--consume", "kcat:1"}, true, nil},
		{"kcat with acks=0 in a list", []string{"--acks", "0,1", "--consume", "kcat:1"}, true, nil},
		{"kcat with acks=1 and all", []string{"--acks", "both", "--consume", "kcat:1"}, false, []consumePass{{clientKcat, 1}}},
		{"one franz-go with txn", []string{"--acks", "txn"}, false, []consumePass{{clientFranzGo, 1}}},
		{"kcat over sasl_ssl", []string{"--compare", "brook", "--security", "sasl_ssl", "--consume", "kcat:1"}, true, nil},
		{"split over sasl_ssl", []string{"--compare", "brook", "--security", "sasl_ssl", "--consume", "franz-go:2"}, false, []consumePass{{clientFranzGo, 2}}},
		{"bad list", []string{"--consume", "kcat:two"}, true, nil},
		{"brook override", []string{"--brook-override", "socket.send.buffer.bytes=-1", "--brook-override", "num.io.threads=4"}, false, []consumePass{{clientFranzGo, 1}}},
		{"brook override without a value", []string{"--brook-override", "socket.send.buffer.bytes"}, true, nil},
		{"brook override with --brokers", []string{"--brokers", "127.0.0.1:9092", "--brook-override", "num.io.threads=4"}, true, nil},
		{"brook override comparing kafka alone", []string{"--compare", "kafka", "--brook-override", "num.io.threads=4"}, true, nil},
		{"brook override comparing brook", []string{"--compare", "kafka,brook", "--brook-override", "num.io.threads=4"}, false, []consumePass{{clientFranzGo, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseFlags(%v) error = %v, want error %v", tt.args, err, tt.wantErr)
			}
			if err == nil && !slices.Equal(o.passes, tt.want) {
				t.Errorf("parseFlags(%v) passes = %v, want %v", tt.args, o.passes, tt.want)
			}
		})
	}
}

func TestParsePerfLine(t *testing.T) {
	out := "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n" +
		"2026-12-07 12:40:01:123, 2026-12-07 12:40:04:456, 977.5391, 293.2760, 1000001, 300030.3030, 312, 3021, 323.5813, 331017.2128\n"
	mib, fetch, err := parsePerfLine([]byte(out))
	if err != nil || mib != 977.5391 || fetch != 3021*time.Millisecond {
		t.Errorf("parsePerfLine = %v, %v, %v; want 977.5391, 3.021s, nil", mib, fetch, err)
	}
	for _, bad := range []string{"", "WARN something\n", "a, b, c\n", strings.Replace(out, "3021", "-1", 1), strings.Replace(out, "977.5391", "x", 1)} {
		if _, _, err := parsePerfLine([]byte(bad)); err == nil {
			t.Errorf("parsePerfLine(%q) took it", bad)
		}
	}
}

func TestBuildRowsConsumePasses(t *testing.T) {
	mk := func(mbps, perGiB float64) serverRun {
		return serverRun{byAcks: map[string]runSummary{"1": {consumeMBps: mbps / 2, passes: map[string]passSummary{
			"franz-go x4": {mbps: mbps, cpuPerGiB: perGiB},
		}}}}
	}
	runs := map[string][]serverRun{
		"brook": {mk(900, 0.5), mk(700, 0.7), mk(800, 0.6)},
		"kafka": {mk(400, 2), mk(600, 1), mk(500, 3)},
	}
	passes := []consumePass{{clientFranzGo, 1}, {clientFranzGo, 4}}
	byMetric := map[string]row{}
	for _, r := range buildRows([]string{"1"}, passes, false, runs) {
		byMetric[r.metric] = r
	}
	rate, ok := byMetric["acks=1 consume, franz-go x4"]
	if !ok || rate.values["brook"] != 800 || rate.values["kafka"] != 500 {
		t.Fatalf("rate row %+v, want medians 800 and 500", rate)
	}
	if _, _, met := rate.verdict(); met != "yes" {
		t.Errorf("1.6x: met = %s", met)
	}
	cpu, ok := byMetric["acks=1 consume, franz-go x4, broker CPU per GiB"]
	if !ok || cpu.values["brook"] != 0.6 || cpu.values["kafka"] != 2 || cpu.dir != lowerIsBetter {
		t.Fatalf("CPU row %+v, want medians 0.6 and 2, lower is better", cpu)
	}
	// The default pass alone adds no rows of its own.
	for _, r := range buildRows([]string{"1"}, passes[:1], false, runs) {
		if strings.Contains(r.metric, " x1") {
			t.Errorf("row %q for the default pass", r.metric)
		}
	}
}

// TestConsumePassesReadEverything produces to a real Brook and reads the
// topic with every client kind that is installed: each pass must count
// every record once per reader (the split by its own count, kcat by its
// exit at the end), and the broker's CPU must be charged to it.
func TestConsumePassesReadEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	bin, remove, err := testutil.BrookBinary()
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	dir, addr, _, err := newServerDir("brook")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := brookSpec(bin, dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := startServer(ctx, spec, dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	consume := "franz-go:1,franz-go:3"
	if _, err := exec.LookPath("kcat"); err == nil {
		consume += ",kcat:2"
	} else {
		t.Log("no kcat on PATH: its pass is not checked")
	}
	o, err := parseFlags([]string{"--records", "3000", "--record-size", "100", "--partitions", "5", "--consume", consume}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o.brokerCPU = s.cpuTimes
	res, err := benchOnce(ctx, o, []string{addr}, "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, s.logTail(30))
	}
	if len(res.passes) != len(o.passes) {
		t.Fatalf("%d passes, want %d", len(res.passes), len(o.passes))
	}
	for i, p := range res.passes {
		readers := 1
		if p.pass.client == clientKcat {
			readers = p.pass.consumers
		}
		want := readers * 3001 // with the warm-up record
		if p.pass != o.passes[i] || p.tp.records != want || p.tp.bytes != int64(want)*100 {
			t.Errorf("pass %d (%v, want %v): %d records, %d bytes; want %d and %d", i, p.pass, o.passes[i], p.tp.records, p.tp.bytes, want, want*100)
		}
	}
	if res.consume != res.passes[0].tp {
		t.Error("the consume result is not the first pass's")
	}
}

// TestBrookSpecOverridesComeLast: brook takes the last --override of a
// key, so --brook-override's settings must follow the ones brookSpec sets
// to be able to replace them.
func TestBrookSpecOverridesComeLast(t *testing.T) {
	o, err := parseFlags([]string{"--brook-bin", "/bin/true", "--brook-override", "socket.send.buffer.bytes=-1", "--brook-override", "broker.id=7"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := brookSpec(o.brookBin, t.TempDir(), "127.0.0.1:1", o.brookOverrides...)
	if err != nil {
		t.Fatal(err)
	}
	n := len(spec.argv)
	if want := []string{"--override", "socket.send.buffer.bytes=-1", "--override", "broker.id=7"}; n < 4 || !slices.Equal(spec.argv[n-4:], want) {
		t.Errorf("argv %v does not end with %v", spec.argv, want)
	}
}
