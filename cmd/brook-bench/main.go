// Command brook-bench is a load program for Brook (or any Kafka broker):
// it produces records with franz-go and reports produce throughput,
// end-to-end latency percentiles and consume throughput.
//
// Without --brokers it starts its own brook from --brook-bin on a free
// 127.0.0.1 port with data in a temp dir, and stops it by PID at the end.
//
// --compare brook,kafka starts Brook and then Apache Kafka (through
// --kafka-script, scripts/kafka-server.sh), each alone and --repeat times
// from a fresh temp dir, runs the same workload against each, and prints
// a table of medians: throughput, end-to-end latency, peak RSS (VmHWM) and
// cold start (exec to the first ApiVersions answer), with Brook/Kafka
// ratios against the mission targets. kfake, franz-go's in-memory fake
// broker, can join the list (--compare brook,kafka,kfake): this program
// serves it as a child in a hidden --serve-kfake mode, measured like the
// others, and the table adds a kfake column and Brook/kfake ratios, against
// which the goals set relative to kfake are read (at most 1.00x).
//
// --inprocess-profile FILE runs Brook inside this process under a CPU
// profile and drives it from a child brook-bench.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type options struct {
	brokers           string
	brookBin          string
	records           int
	recordSize        int
	partitions        int
	replicationFactor int
	acks              string
	compression       string
	linger            time.Duration
	batchBytes        int
	fetchMaxWait      time.Duration
	maxInflight       int
	rate              int
	timeout           time.Duration
	compare           string
	repeat            int
	kafkaScript       string
	kafkaHeap         string
	inprocessProfile  string
	warmup            int
	txnInterval       time.Duration
	security          string
	// produceOnly skips the latency consumer and the consume pass.
	produceOnly bool
	consume     string
	// brookOverrides are --brook-override's KEY=VALUE settings, passed to
	// every brook this program starts.
	brookOverrides []string
	perfScript     string
	// passes are --consume's consume passes, in order.
	passes []consumePass
	// brokerCPU, if set, reads the server's CPU time so far, to charge
	// each consume pass with what it cost the broker.
	brokerCPU func() (cpuTimes, error)
	// clientOpts are added to every workload client (--security's TLS
	// and SASL settings).
	clientOpts []kgo.Opt
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("brook-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.brokers, "brokers", "", "bootstrap brokers host:port,...; empty starts a brook from --brook-bin")
	fs.StringVar(&o.brookBin, "brook-bin", "bin/brook", "brook binary to start when --brokers is empty")
	fs.IntVar(&o.records, "records", 200000, "records to produce per acks setting")
	fs.IntVar(&o.recordSize, "record-size", 1024, "value size in bytes (at least 8: the send time)")
	fs.IntVar(&o.partitions, "partitions", 12, "partitions of the benchmark topic")
	fs.IntVar(&o.replicationFactor, "replication-factor", 1, "replication factor of the benchmark topic")
	fs.StringVar(&o.acks, "acks", "1", "producer acks, a comma-separated list run in order: 0, 1, all, both (1 then all),\ntxn (transactional acks=all produce, a commit every --txn-interval)")
	fs.DurationVar(&o.txnInterval, "txn-interval", 100*time.Millisecond, "with --acks txn: how often the producer commits its transaction")
	fs.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	fs.DurationVar(&o.linger, "linger", time.Millisecond, "producer linger")
	fs.IntVar(&o.batchBytes, "batch-bytes", 16384, "producer max batch size in bytes")
	fs.DurationVar(&o.fetchMaxWait, "fetch-max-wait", 500*time.Millisecond, "consumer fetch.max.wait (Java client default)")
	fs.IntVar(&o.maxInflight, "max-inflight", 1000, "records handed to the client and not yet acknowledged, at most; the\nsend time is stamped when a record gets a slot, so latency includes at most this much queueing")
	fs.IntVar(&o.rate, "rate", 0, "records/s to produce; 0 produces as fast as acknowledgements allow")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.StringVar(&o.compare, "compare", "", "servers to start and compare, in order: a comma-separated list of brook, kafka and kfake\n(franz-go's in-memory fake broker, run by this program as a child; plaintext, replication factor 1).\nThe table's Brook/kfake column is Brook's median over kfake's: at most 1.00x on the broker CPU time\nrow of a --produce-only --record-size 100 run, and on the p99 end-to-end row of a --rate 5000 run,\nmeets the goals set against kfake")
	fs.IntVar(&o.repeat, "repeat", 3, "with --compare: fresh starts per server; the table shows medians")
	fs.StringVar(&o.kafkaScript, "kafka-script", "scripts/kafka-server.sh", "with --compare kafka: the script that runs Apache Kafka")
	fs.StringVar(&o.kafkaHeap, "kafka-heap", defaultKafkaHeap, "with --compare kafka: KAFKA_HEAP_OPTS")
	fs.IntVar(&o.warmup, "warmup", 0, "with --compare: records produced and consumed (acks=1, untimed) after each start, before the timed runs,\nso a JVM broker is measured after its JIT compiled the hot paths")
	fs.StringVar(&o.security, "security", securityPlaintext, "with --compare: the workload's listener, plaintext or sasl_ssl (TLS, then SCRAM-SHA-512; the same PKCS12 key store for each server)")
	fs.BoolVar(&o.produceOnly, "produce-only", false, "produce and nothing else: no latency consumer, no consume pass, so that the\nbroker's CPU time (--compare, --inprocess-profile) is the produce path's")
	fs.StringVar(&o.consume, "consume", defaultConsume, "consume passes after each produce, in order: a comma-separated list of CLIENT:N, N clients at once;\nfranz-go:N splits the partitions between N franz-go clients, kcat:N and perf:N run N kcat processes or\nKafka ConsumerPerformance tools each reading every partition. The first pass is the table's consume row")
	fs.Func("brook-override", "a `KEY=VALUE` broker setting for every brook this program starts or runs in process (repeatable), to measure a setting's effect", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.brookOverrides = append(o.brookOverrides, v)
		return nil
	})
	fs.StringVar(&o.perfScript, "perf-script", "compat-tests/bin/kafka-consumer-perf-test.sh", "with --consume perf:N: the script that runs Kafka's ConsumerPerformance")
	fs.StringVar(&o.inprocessProfile, "inprocess-profile", "", "run brook in this process and write its CPU profile to `FILE` (allocations to FILE.allocs)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.records <= 0 || o.partitions <= 0 || o.replicationFactor <= 0 || o.batchBytes <= 0 || o.maxInflight <= 0 {
		return o, errors.New("--records, --partitions, --replication-factor, --batch-bytes and --max-inflight must be positive")
	}
	if o.txnInterval <= 0 {
		return o, errors.New("--txn-interval must be positive")
	}
	if o.rate < 0 {
		return o, errors.New("--rate must not be negative")
	}
	if o.recordSize < timestampBytes {
		return o, fmt.Errorf("--record-size must be at least %d (the send time)", timestampBytes)
	}
	if _, err := acksModes(o.acks); err != nil {
		return o, err
	}
	if _, err := codec(o.compression); err != nil {
		return o, err
	}
	if o.security != securityPlaintext && (o.security != securitySASLSSL || o.compare == "") {
		return o, fmt.Errorf("--security %q: want plaintext, or sasl_ssl with --compare", o.security)
	}
	if err := checkCompare(o); err != nil {
		return o, err
	}
	if len(o.brookOverrides) > 0 && !startsBrook(o) {
		// Accepted, it would change nothing and say nothing.
		return o, errors.New("--brook-override applies to a brook this program starts: drop it with --brokers, or add brook to --compare")
	}
	if o.produceOnly {
		// Without this, a --consume given with --produce-only would be
		// dropped unsaid, its rows left empty.
		consumeSet := false
		fs.Visit(func(f *flag.Flag) { consumeSet = consumeSet || f.Name == "consume" })
		if consumeSet {
			return o, errors.New("--produce-only runs no consume pass: drop --consume")
		}
		return o, nil
	}
	var err error
	if o.passes, err = parseConsumePasses(o.consume); err != nil {
		return o, err
	}
	if err := checkConsumePasses(o, o.passes); err != nil {
		return o, err
	}
	return o, nil
}

// startsBrook reports whether a run with o starts a brook of its own (or
// runs one in process), which --brook-override configures.
func startsBrook(o options) bool {
	if o.compare != "" {
		return slices.Contains(strings.Split(o.compare, ","), "brook")
	}
	return o.brokers == ""
}

func checkCompare(o options) error {
	if o.compare == "" {
		return nil
	}
	if o.brokers != "" || o.inprocessProfile != "" {
		return errors.New("--compare starts its own servers: drop --brokers and --inprocess-profile")
	}
	if o.repeat <= 0 {
		return errors.New("--repeat must be positive")
	}
	if o.warmup < 0 {
		return errors.New("--warmup must not be negative")
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(o.compare, ",") {
		if name != "brook" && name != "kafka" && name != serverKfake || seen[name] {
			return fmt.Errorf("--compare %q: want a list of brook, kafka and kfake, each at most once", o.compare)
		}
		seen[name] = true
	}
	if seen[serverKfake] {
		return checkKfake(o)
	}
	return nil
}

// acksModes expands --acks into the settings to run, in order: a
// comma-separated list of 0, 1, all (or -1), txn (transactional produce,
// acks=all, a commit every --txn-interval), and both (1 then all).
func acksModes(acks string) ([]string, error) {
	var out []string
	add := func(m string) error {
		if slices.Contains(out, m) {
			return fmt.Errorf("--acks %q: %s twice", acks, m)
		}
		out = append(out, m)
		return nil
	}
	for _, m := range strings.Split(acks, ",") {
		var err error
		switch m {
		case "0", "1", "all", acksTxn:
			err = add(m)
		case "-1":
			err = add("all")
		case "both":
			if err = add("1"); err == nil {
				err = add("all")
			}
		default:
			err = fmt.Errorf("--acks %q: want a list of 0, 1, all, txn or both", acks)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func main() {
	if addr, ok, err := parseServeKfake(os.Args[1:]); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, "brook-bench:", err)
			os.Exit(2)
		}
		os.Exit(serveKfakeMain(addr))
	}
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "brook-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "brook-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) (err error) {
	switch {
	case o.compare != "":
		return compareServers(ctx, o, out)
	case o.inprocessProfile != "":
		return profileInProcess(ctx, o, o.inprocessProfile, out)
	}
	brokers := o.brokers
	if brokers == "" {
		dir, addr, _, err := newServerDir("brook")
		if err != nil {
			return err
		}
		spec, err := brookSpec(o.brookBin, dir, addr, o.brookOverrides...)
		if err != nil {
			os.RemoveAll(dir)
			return err
		}
		b, err := startServer(ctx, spec, dir, addr)
		if err != nil {
			return err
		}
		defer func() {
			if rss, rssErr := b.peakRSS(); rssErr == nil {
				fmt.Fprintf(out, "brook-bench: brook peak RSS %.1f MiB\n", float64(rss)/mebibyte)
			}
			if stopErr := b.stop(); stopErr != nil && err == nil {
				err = stopErr
			}
		}()
		brokers = b.addr
		o.brokerCPU = b.cpuTimes
		fmt.Fprintf(out, "brook-bench: started %s pid %d on %s (data in %s), cold start %v\n", o.brookBin, b.pid(), b.addr, b.dir, round(b.coldStart))
	}
	rate := "max"
	if o.rate > 0 {
		rate = fmt.Sprintf("%d/s", o.rate)
	}
	fmt.Fprintf(out, "brook-bench: brokers=%s records=%d record-size=%d partitions=%d compression=%s linger=%v batch-bytes=%d max-inflight=%d rate=%s\n",
		brokers, o.records, o.recordSize, o.partitions, o.compression, o.linger, o.batchBytes, o.maxInflight, rate)
	modes, _ := acksModes(o.acks)
	seeds := strings.Split(brokers, ",")
	for _, acks := range modes {
		res, err := benchOnce(ctx, o, seeds, acks)
		if err != nil {
			return fmt.Errorf("acks=%s: %w", acks, err)
		}
		res.print(out)
	}
	return nil
}
