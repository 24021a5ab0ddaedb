package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseFlagsKfake(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" when the flags are accepted
	}{
		{"all three", []string{"--compare", "brook,kafka,kfake"}, ""},
		{"kfake alone", []string{"--compare", "kfake"}, ""},
		{"kfake first", []string{"--compare", "kfake,brook"}, ""},
		{"every acks mode and consume pass", []string{"--compare", "brook,kfake", "--acks", "0,all,txn,1", "--compression", "zstd",
			"--warmup", "100", "--consume", "franz-go:1"}, ""},
		{"consume passes", []string{"--compare", "brook,kfake", "--consume", "franz-go:1,franz-go:3,kcat:2,perf:1"}, ""},
		{"produce only at a rate", []string{"--compare", "brook,kfake", "--produce-only", "--rate", "5000"}, ""},
		{"kfake twice", []string{"--compare", "brook,kfake,kfake"}, "each at most once"},
		{"misspelt", []string{"--compare", "brook,kfak"}, "want a list of brook, kafka and kfake"},
		{"sasl_ssl refused", []string{"--compare", "brook,kfake", "--security", "sasl_ssl"}, "plaintext only"},
		{"replicas refused", []string{"--compare", "kfake", "--replication-factor", "3"}, "one broker"},
		// The refusals are kfake's own: without it the same flags pass.
		{"sasl_ssl without kfake", []string{"--compare", "brook,kafka", "--security", "sasl_ssl"}, ""},
		{"replicas without kfake", []string{"--compare", "brook,kafka", "--replication-factor", "3"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, io.Discard)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("parseFlags(%v): %v", tt.args, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("parseFlags(%v) error = %v, want one saying %q", tt.args, err, tt.wantErr)
			case err == nil && o.compare != tt.args[1]:
				t.Errorf("parseFlags(%v) compares %q", tt.args, o.compare)
			}
		})
	}
}

func TestParseServeKfake(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantAddr string
		wantOK   bool
		wantErr  bool
	}{
		{"separate value", []string{"--serve-kfake", "127.0.0.1:9092"}, "127.0.0.1:9092", true, false},
		{"joined value", []string{"--serve-kfake=127.0.0.1:9093"}, "127.0.0.1:9093", true, false},
		{"one dash", []string{"-serve-kfake", "127.0.0.1:9094"}, "127.0.0.1:9094", true, false},
		{"not the mode", []string{"--compare", "kfake"}, "", false, false},
		{"no arguments", nil, "", false, false},
		{"mode later is not the mode", []string{"--records", "5", "--serve-kfake", "127.0.0.1:1"}, "", false, false},
		{"no address", []string{"--serve-kfake"}, "", true, true},
		{"extra argument", []string{"--serve-kfake", "127.0.0.1:1", "--records", "5"}, "", true, true},
		{"other host", []string{"--serve-kfake", "0.0.0.0:9092"}, "", true, true},
		{"no port", []string{"--serve-kfake", "127.0.0.1"}, "", true, true},
		{"port zero", []string{"--serve-kfake", "127.0.0.1:0"}, "", true, true},
		{"port too large", []string{"--serve-kfake", "127.0.0.1:70000"}, "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, ok, err := parseServeKfake(tt.args)
			if addr != tt.wantAddr || ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Errorf("parseServeKfake(%q) = %q, %v, %v; want %q, %v, error %v", tt.args, addr, ok, err, tt.wantAddr, tt.wantOK, tt.wantErr)
			}
		})
	}
}

// TestPrintTableKfake: with kfake compared the table gains a kfake column
// and a Brook/kfake ratio, the target still judging Brook/Kafka; without
// it the table is the two-server one, unchanged.
func TestPrintTableKfake(t *testing.T) {
	mk := func(produce float64, cpu time.Duration) serverRun {
		return serverRun{coldStart: 20 * time.Millisecond, peakRSS: 10 << 20, byAcks: map[string]runSummary{
			"1": {produceMBps: produce, brokerCPU: cpu},
		}}
	}
	runs := map[string][]serverRun{
		"brook":     {mk(300, 400*time.Millisecond)},
		"kafka":     {mk(100, 2*time.Second)},
		serverKfake: {mk(150, 500*time.Millisecond)},
	}
	rows := buildRows([]string{"1"}, nil, true, runs)

	var with strings.Builder
	printTable(&with, rows, true)
	for _, want := range []string{
		"| metric | Brook | Kafka | kfake | Brook/Kafka | Brook/kfake | target | met |\n|---|---:|---:|---:|---:|---:|---|---|\n",
		"| acks=1 produce | 300.0 MB/s | 100.0 MB/s | 150.0 MB/s | 3.00x | 2.00x | >= 1.50x | yes |\n",
		"| acks=1 broker CPU time | 400ms | 2s | 500ms | 0.20x | 0.80x | - | - |\n",
	} {
		if !strings.Contains(with.String(), want) {
			t.Errorf("table with kfake lacks %q:\n%s", want, with.String())
		}
	}

	// brook,kfake: no Kafka figures, so no target is judged, but the
	// kfake ratio is there.
	delete(runs, "kafka")
	var noKafka strings.Builder
	printTable(&noKafka, buildRows([]string{"1"}, nil, true, runs), true)
	if want := "| acks=1 produce | 300.0 MB/s | - | 150.0 MB/s | - | 2.00x | - | - |\n"; !strings.Contains(noKafka.String(), want) {
		t.Errorf("brook,kfake table lacks %q:\n%s", want, noKafka.String())
	}

	var without strings.Builder
	printTable(&without, rows, false)
	want := "| metric | Brook | Kafka | Brook/Kafka | target | met |\n" +
		"|---|---:|---:|---:|---|---|\n" +
		"| acks=1 produce | 300.0 MB/s | 100.0 MB/s | 3.00x | >= 1.50x | yes |\n" +
		"| acks=1 broker CPU time | 400ms | 2s | 0.20x | - | - |\n" +
		"| peak RSS (VmHWM) | 10.0 MiB | 10.0 MiB | 1.00x | <= 0.10x | no |\n" +
		"| cold start | 20ms | 20ms | 1.00x | < 50ms | yes |\n"
	if without.String() != want {
		t.Errorf("table without kfake:\n%s\nwant:\n%s", without.String(), want)
	}
}

// TestKfakeServesTheWorkload starts kfake the way --compare does (this
// test binary in kfakeSpec's serving mode, see TestMain), runs a small
// workload against it and checks that every record was stored: the
// topic's end offsets and a consume count, not just the absence of an
// error.
func TestKfakeServesTheWorkload(t *testing.T) {
	dir, addr, _, err := newServerDir(serverKfake)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := kfakeSpec(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := startServer(ctx, spec, dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = s.stop()
		}
	}()
	o, err := parseFlags([]string{"--records", "2000", "--record-size", "100", "--partitions", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o.brokerCPU = s.cpuTimes
	res, err := benchOnce(ctx, o, []string{addr}, "1")
	if err != nil {
		t.Fatalf("workload against kfake: %v\n%s", err, s.logTail(30))
	}
	if res.produce.records != 2000 || len(res.latencies) != 2000 || res.consume.records != 2001 || res.consume.bytes != 2001*100 {
		t.Errorf("produced %d, latencies %d, consumed %d records of %d bytes; want 2000, 2000, 2001 of %d (with the warm-up record)",
			res.produce.records, len(res.latencies), res.consume.records, res.consume.bytes, 2001*100)
	}
	topics, err := listBenchTopics(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 {
		t.Fatalf("kfake has topics %v, want the one benchmark topic", topics)
	}
	ends, err := endOffsets(ctx, []string{addr}, topics[0])
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, end := range ends {
		stored += end
	}
	if len(ends) != 3 || stored != 2001 {
		t.Errorf("end offsets %v: %d records in %d partitions, want 2001 in 3", ends, stored, len(ends))
	}
	if rss, err := s.peakRSS(); err != nil || rss <= 0 {
		t.Errorf("peakRSS = %d, %v; want kfake's own positive size", rss, err)
	}
	if log := s.logTail(5); !strings.Contains(log, "kfake") || !strings.Contains(log, addr) {
		t.Errorf("kfake's log has no start line naming %s: %q", addr, log)
	}
	stopped = true
	if err := s.stop(); err != nil {
		t.Errorf("kfake did not exit cleanly on SIGTERM: %v", err)
	}
}

func listBenchTopics(ctx context.Context, addr string) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	return listed.Names(), nil
}

// TestCompareKfake runs --compare kfake end to end, warm-up included, and
// checks that the table shows kfake's figures in its column.
func TestCompareKfake(t *testing.T) {
	o, err := parseFlags([]string{"--compare", "kfake", "--repeat", "1", "--records", "1000", "--warmup", "200",
		"--record-size", "100", "--partitions", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := compareServers(ctx, o, &out); err != nil {
		t.Fatalf("compare kfake: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"== kfake run 1/1: warm-up of 200 records done",
		"| metric | Brook | Kafka | kfake | Brook/Kafka | Brook/kfake | target | met |",
		"| acks=1 produce | - | - | ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	rows := 0
	for _, line := range strings.Split(got, "\n") {
		if !strings.HasPrefix(line, "| acks=1 consume |") {
			continue
		}
		rows++
		if !strings.Contains(line, " MB/s | - | - |") || strings.Contains(line, "| 0.0 MB/s") {
			t.Errorf("consume row without a kfake rate: %q", line)
		}
	}
	if rows != 1 {
		t.Errorf("%d acks=1 consume rows, want 1:\n%s", rows, got)
	}
}
