package main

import (
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// naiveQuantile counts, for each candidate, how many samples are at or
// below it, and returns the smallest candidate covering q of them.
func naiveQuantile(samples []time.Duration, q float64) time.Duration {
	best := time.Duration(-1)
	for _, c := range samples {
		n := 0
		for _, s := range samples {
			if s <= c {
				n++
			}
		}
		// n/len >= q, with the same float tolerance as the nearest-rank code.
		if float64(n) >= q*float64(len(samples))-1e-9 && (best < 0 || c < best) {
			best = c
		}
	}
	return best
}

func TestQuantilesMatchNaiveModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	qs := []float64{0.001, 0.5, 0.9, 0.99, 0.999, 1}
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(500)
		samples := make([]time.Duration, n)
		for i := range samples {
			samples[i] = time.Duration(rng.IntN(50)) // many duplicates
		}
		orig := slices.Clone(samples)
		got := quantiles(samples, qs...)
		for i, q := range qs {
			if want := naiveQuantile(samples, q); got[i] != want {
				t.Fatalf("n=%d q=%v: quantiles = %v, naive = %v", n, q, got[i], want)
			}
		}
		if !slices.Equal(samples, orig) {
			t.Fatal("quantiles reordered the caller's samples")
		}
	}
}

func TestQuantilesExactRanks(t *testing.T) {
	samples := make([]time.Duration, 1000)
	for i := range samples {
		samples[len(samples)-1-i] = time.Duration(i + 1) // 1..1000, reversed
	}
	got := quantiles(samples, 0.5, 0.99, 0.999, 1)
	want := []time.Duration{500, 990, 999, 1000}
	if !slices.Equal(got, want) {
		t.Errorf("quantiles = %v, want %v", got, want)
	}
	if quantiles(nil, 0.5) != nil {
		t.Error("quantiles of no samples should be nil")
	}
}

func TestAcksModes(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"1", []string{"1"}, false},
		{"all", []string{"all"}, false},
		{"-1", []string{"all"}, false},
		{"0", []string{"0"}, false},
		{"both", []string{"1", "all"}, false},
		{"txn", []string{"txn"}, false},
		{"1,all,txn", []string{"1", "all", "txn"}, false},
		{"both,txn", []string{"1", "all", "txn"}, false},
		{"all,-1", nil, true},
		{"1,,all", nil, true},
		{"2", nil, true},
		{"", nil, true},
	}
	for _, tt := range tests {
		got, err := acksModes(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("acksModes(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		check   func(options) bool
	}{
		{"defaults", nil, false, func(o options) bool {
			return o.records == 200000 && o.recordSize == 1024 && o.partitions == 12 &&
				o.acks == "1" && o.compression == "none" && o.brokers == "" && o.batchBytes == 16384 && !o.produceOnly
		}},
		{"all set", []string{"--brokers", "a:1,b:2", "--records", "5", "--record-size", "8",
			"--acks", "both", "--compression", "zstd", "--partitions", "3"}, false, func(o options) bool {
			return o.brokers == "a:1,b:2" && o.records == 5 && o.recordSize == 8 &&
				o.acks == "both" && o.compression == "zstd" && o.partitions == 3
		}},
		{"value too small for the send time", []string{"--record-size", "7"}, true, nil},
		{"bad acks", []string{"--acks", "some"}, true, nil},
		{"bad compression", []string{"--compression", "brotli"}, true, nil},
		{"zero records", []string{"--records", "0"}, true, nil},
		{"zero max-inflight", []string{"--max-inflight", "0"}, true, nil},
		{"negative rate", []string{"--rate", "-1"}, true, nil},
		{"txn interval", []string{"--acks", "txn", "--txn-interval", "50ms"}, false, func(o options) bool {
			return o.acks == "txn" && o.txnInterval == 50*time.Millisecond
		}},
		{"zero txn interval", []string{"--txn-interval", "0s"}, true, nil},
		{"rate", []string{"--rate", "5000"}, false, func(o options) bool { return o.rate == 5000 }},
		{"stray argument", []string{"extra"}, true, nil},
		{"compare both", []string{"--compare", "brook,kafka", "--repeat", "5"}, false, func(o options) bool {
			return o.compare == "brook,kafka" && o.repeat == 5 && o.kafkaScript == "scripts/kafka-server.sh" && o.kafkaHeap == defaultKafkaHeap
		}},
		{"compare kafka only", []string{"--compare", "kafka", "--kafka-heap", "-Xmx512M"}, false, func(o options) bool {
			return o.compare == "kafka" && o.kafkaHeap == "-Xmx512M"
		}},
		{"compare unknown server", []string{"--compare", "brook,redpanda"}, true, nil},
		{"compare twice the same", []string{"--compare", "brook,brook"}, true, nil},
		{"compare with brokers", []string{"--compare", "brook", "--brokers", "a:1"}, true, nil},
		{"compare negative warm-up", []string{"--compare", "brook", "--warmup", "-1"}, true, nil},
		{"compare warm-up", []string{"--compare", "kafka", "--warmup", "1000"}, false, func(o options) bool { return o.warmup == 1000 }},
		{"compare zero repeat", []string{"--compare", "brook", "--repeat", "0"}, true, nil},
		{"security default", []string{"--compare", "brook"}, false, func(o options) bool { return o.security == securityPlaintext }},
		{"security sasl_ssl", []string{"--compare", "brook,kafka", "--security", "sasl_ssl"}, false, func(o options) bool { return o.security == securitySASLSSL }},
		{"security without compare", []string{"--security", "sasl_ssl"}, true, nil},
		{"security unknown", []string{"--compare", "brook", "--security", "ssl"}, true, nil},
		{"profile", []string{"--inprocess-profile", "cpu.out"}, false, func(o options) bool { return o.inprocessProfile == "cpu.out" }},
		{"produce only", []string{"--compare", "brook", "--produce-only"}, false, func(o options) bool { return o.produceOnly && o.passes == nil }},
		{"produce only with consume", []string{"--compare", "brook", "--produce-only", "--consume", "franz-go:1"}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseFlags(%v) error = %v, want error %v", tt.args, err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(o) {
				t.Errorf("parseFlags(%v) = %+v", tt.args, o)
			}
		})
	}
}

// TestChildLoadArgsParse checks that --inprocess-profile's child process
// accepts the flags it is given, --produce-only among them.
func TestChildLoadArgsParse(t *testing.T) {
	for _, args := range [][]string{
		{"--inprocess-profile", "cpu.out"},
		{"--inprocess-profile", "cpu.out", "--produce-only"},
		{"--inprocess-profile", "cpu.out", "--consume", "franz-go:2", "--acks", "all"},
	} {
		o, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatalf("parseFlags(%v): %v", args, err)
		}
		child := childLoadArgs(o, "127.0.0.1:9092")
		c, err := parseFlags(child, io.Discard)
		if err != nil {
			t.Fatalf("the child of %v refuses its flags %v: %v", args, child, err)
		}
		if c.produceOnly != o.produceOnly || c.consume != o.consume || c.acks != o.acks {
			t.Errorf("the child of %v runs %+v", args, c)
		}
	}
}

// TestInProcessConfigTakesOverrides checks that --brook-override applies to
// the brook --inprocess-profile runs, as to those --compare starts.
func TestInProcessConfigTakesOverrides(t *testing.T) {
	o, err := parseFlags([]string{"--inprocess-profile", "cpu.out", "--brook-override", "connections.max.idle.ms=1234"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := inProcessConfig(o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnectionsMaxIdle != 1234*time.Millisecond {
		t.Errorf("connections.max.idle.ms is %v in process, want the override's 1.234s", cfg.ConnectionsMaxIdle)
	}
}
