package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultKafkaHeap is kafka-server-start.sh's KAFKA_HEAP_OPTS default.
const defaultKafkaHeap = "-Xmx1G -Xms1G"

// runSummary is what one run of one acks setting contributes to the table.
type runSummary struct {
	produceMBps float64
	consumeMBps float64
	p50, p99    time.Duration
	// commitP50 and commitP99 are the transactional workload's commit
	// latencies (flush + EndTxn); 0 for the others.
	commitP50, commitP99 time.Duration
	// brokerCPU is the server's CPU time over the run (produce, latency
	// consumer and consume passes), from /proc/PID/stat.
	brokerCPU time.Duration
	// passes holds each consume pass's rate and broker CPU per GiB, by
	// the pass's name.
	passes map[string]passSummary
}

type passSummary struct {
	mbps, cpuPerGiB, systemPerGiB float64
}

// serverRun is one start of one server: its own cold start and peak RSS,
// and a summary per acks setting run against it.
type serverRun struct {
	coldStart time.Duration
	peakRSS   int64
	byAcks    map[string]runSummary
}

func summarize(r result) runSummary {
	s := runSummary{produceMBps: r.produce.mbps(), consumeMBps: r.consume.mbps(), passes: map[string]passSummary{}}
	for _, p := range r.passes {
		s.passes[p.pass.String()] = passSummary{mbps: p.tp.mbps(), cpuPerGiB: p.cpuPerGiB(), systemPerGiB: p.systemPerGiB()}
	}
	if q := quantiles(r.latencies, 0.50, 0.99); q != nil {
		s.p50, s.p99 = q[0], q[1]
	}
	if q := quantiles(r.commits, 0.50, 0.99); q != nil {
		s.commitP50, s.commitP99 = q[0], q[1]
	}
	return s
}

// compareServers starts each named server o.repeat times, one at a time,
// each alone and in alternating rounds, runs every acks setting against each start, and prints
// a table of medians with Brook/Kafka ratios (and Brook/kfake ones when kfake is compared).
func compareServers(ctx context.Context, o options, out io.Writer) error {
	names := strings.Split(o.compare, ",")
	modes, _ := acksModes(o.acks)
	runs := make(map[string][]serverRun, len(names))
	heap := o.kafkaHeap
	if heap == "" {
		heap = defaultKafkaHeap
	}
	var sec *benchTLS
	if o.security == securitySASLSSL {
		dir, err := os.MkdirTemp("", "brook-bench-tls-")
		if err != nil {
			return fmt.Errorf("temp dir: %w", err)
		}
		defer os.RemoveAll(dir)
		if sec, err = newBenchTLS(dir); err != nil {
			return err
		}
		o.clientOpts = slices.Clip(sec.clientOpts())
		fmt.Fprintf(out, "security: SASL_SSL, SCRAM-SHA-512, key store %s for every server\n", sec.keyStore)
	}
	// Rounds alternate between the servers (brook, kafka, brook, ...), so
	// that a change in the shared machine's load over the minutes of the
	// comparison lands on both rather than on whichever ran last.
	for rep := 1; rep <= o.repeat; rep++ {
		for _, name := range names {
			run, err := runServerOnce(ctx, o, sec, name, heap, modes, rep, out)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", name, rep, err)
			}
			runs[name] = append(runs[name], run)
		}
	}
	fmt.Fprintf(out, "\nMedians of %d runs; security=%s records=%d record-size=%d partitions=%d compression=%s warm-up=%d max-inflight=%d txn-interval=%v; kafka heap: %s\n\n",
		o.repeat, o.security, o.records, o.recordSize, o.partitions, o.compression, o.warmup, o.maxInflight, o.txnInterval, heap)
	withKfake := slices.Contains(names, serverKfake)
	if withKfake {
		// The goals set against kfake are ratios with no fixed target
		// here: the reader takes them from the Brook/kfake column.
		fmt.Fprint(out, "Brook/kfake is Brook's median over kfake's (franz-go's in-memory fake broker). The kfake goals are met where it is\n"+
			"at most 1.00x: broker CPU time with --produce-only --record-size 100 (the same records, so the same ratio per GiB),\n"+
			"and p99 end-to-end with --rate 5000. The target and met columns are Brook/Kafka's.\n\n")
	}
	printTable(out, buildRows(modes, o.passes, o.produceOnly, runs), withKfake)
	return nil
}

// runServerOnce starts server name once and runs the workload against it,
// over a SASL_SSL listener when sec is set.
func runServerOnce(ctx context.Context, o options, sec *benchTLS, name, heap string, modes []string, rep int, out io.Writer) (run serverRun, err error) {
	dir, addr, port, err := newServerDir(name)
	if err != nil {
		return run, err
	}
	var spec serverSpec
	switch name {
	case "brook":
		spec, err = brookSpec(o.brookBin, dir, addr, o.brookOverrides...)
	case "kafka":
		spec, err = kafkaSpec(o.kafkaScript, dir, port)
		spec.env = append(os.Environ(), "KAFKA_HEAP_OPTS="+heap)
	case serverKfake:
		spec, err = kfakeSpec(addr)
	default:
		err = fmt.Errorf("unknown server %q", name)
	}
	target := addr
	if err == nil && sec != nil {
		var port int
		if port, err = freePort(); err == nil {
			target = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			err = sec.secure(&spec, dir, addr, port)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return run, err
	}
	s, err := startServer(ctx, spec, dir, addr)
	if err != nil {
		return run, err
	}
	defer func() {
		if stopErr := s.stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	if sec != nil {
		if err := sec.createBenchUser(ctx, addr, target); err != nil {
			return run, err
		}
	}
	o.brokerCPU = s.cpuTimes
	run.coldStart = s.coldStart
	run.byAcks = make(map[string]runSummary, len(modes))
	fmt.Fprintf(out, "== %s run %d/%d: pid %d on %s, cold start %v, load average %s\n", name, rep, o.repeat, s.pid(), addr, round(s.coldStart), loadAverage())
	if o.warmup > 0 {
		w := o
		w.records = o.warmup
		// The JIT warms up on the fetch path whichever client reads.
		w.passes = []consumePass{{clientFranzGo, 1}}
		if _, err := benchOnce(ctx, w, []string{target}, "1"); err != nil {
			return run, fmt.Errorf("warm-up: %w", err)
		}
		fmt.Fprintf(out, "== %s run %d/%d: warm-up of %d records done (not counted)\n", name, rep, o.repeat, o.warmup)
	}
	for _, acks := range modes {
		cpuBefore, err := s.cpuTime()
		if err != nil {
			return run, err
		}
		res, err := benchOnce(ctx, o, []string{target}, acks)
		if err != nil {
			return run, fmt.Errorf("acks=%s: %w", acks, err)
		}
		cpuAfter, err := s.cpuTime()
		if err != nil {
			return run, err
		}
		res.print(out)
		sum := summarize(res)
		sum.brokerCPU = cpuAfter - cpuBefore
		fmt.Fprintf(out, "acks=%-3s %s CPU time over the run: %v\n", acks, name, sum.brokerCPU)
		run.byAcks[acks] = sum
	}
	fmt.Fprintf(out, "== %s run %d/%d: load average after the workload %s\n", name, rep, o.repeat, loadAverage())
	// Sampled after the workload, before SIGTERM: the high-water mark
	// covers start-up and every phase.
	if run.peakRSS, err = s.peakRSS(); err != nil {
		return run, err
	}
	fmt.Fprintf(out, "== %s run %d/%d: peak RSS %.1f MiB\n", name, rep, o.repeat, float64(run.peakRSS)/mebibyte)
	return run, nil
}

// better says which way a metric improves, for the target check.
type better int

const (
	higherIsBetter better = iota
	lowerIsBetter
)

// row is one line of the comparison table: per-server medians and the
// mission target for the Brook/Kafka ratio (0: none).
type row struct {
	metric string
	values map[string]float64
	format func(float64) string
	dir    better
	target float64
	// absTarget, if set, is a bound on Brook's own value (cold start).
	absTarget float64
}

// buildRows makes the table's rows; passes, when other than the one
// default consume pass, get a rate row and a broker CPU per GiB row each.
func buildRows(modes []string, passes []consumePass, produceOnly bool, runs map[string][]serverRun) []row {
	mbps := func(v float64) string { return fmt.Sprintf("%.1f MB/s", v) }
	perGiB := func(v float64) string { return fmt.Sprintf("%.2f CPU-s/GiB", v) }
	if len(passes) == 1 && passes[0] == (consumePass{clientFranzGo, 1}) {
		passes = nil
	}
	dur := func(v float64) string { return round(time.Duration(v)).String() }
	mib := func(v float64) string { return fmt.Sprintf("%.1f MiB", v/mebibyte) }
	var rows []row
	for _, acks := range modes {
		pick := func(f func(runSummary) float64) map[string]float64 {
			return medianBy(runs, func(r serverRun) float64 { return f(r.byAcks[acks]) })
		}
		rows = append(rows,
			row{metric: "acks=" + acks + " produce", values: pick(func(s runSummary) float64 { return s.produceMBps }), format: mbps, dir: higherIsBetter, target: 1.5})
		if !produceOnly { // nothing consumed: no consume or end-to-end rows of zeros
			rows = append(rows,
				row{metric: "acks=" + acks + " consume", values: pick(func(s runSummary) float64 { return s.consumeMBps }), format: mbps, dir: higherIsBetter, target: 1.5},
				row{metric: "acks=" + acks + " p50 end-to-end", values: pick(func(s runSummary) float64 { return float64(s.p50) }), format: dur, dir: lowerIsBetter},
				row{metric: "acks=" + acks + " p99 end-to-end", values: pick(func(s runSummary) float64 { return float64(s.p99) }), format: dur, dir: lowerIsBetter, target: 1.0 / 3},
			)
		}
		for _, p := range passes {
			name := p.String()
			rows = append(rows,
				row{metric: "acks=" + acks + " consume, " + name, values: pick(func(s runSummary) float64 { return s.passes[name].mbps }), format: mbps, dir: higherIsBetter, target: 1.5},
				row{metric: "acks=" + acks + " consume, " + name + ", broker CPU per GiB", values: pick(func(s runSummary) float64 { return s.passes[name].cpuPerGiB }), format: perGiB, dir: lowerIsBetter},
				row{metric: "acks=" + acks + " consume, " + name + ", of which system", values: pick(func(s runSummary) float64 { return s.passes[name].systemPerGiB }), format: perGiB, dir: lowerIsBetter},
			)
		}
		if acks == acksTxn {
			rows = append(rows,
				row{metric: "acks=" + acks + " p50 commit", values: pick(func(s runSummary) float64 { return float64(s.commitP50) }), format: dur, dir: lowerIsBetter},
				row{metric: "acks=" + acks + " p99 commit", values: pick(func(s runSummary) float64 { return float64(s.commitP99) }), format: dur, dir: lowerIsBetter},
			)
		}
		rows = append(rows,
			row{metric: "acks=" + acks + " broker CPU time", values: pick(func(s runSummary) float64 { return float64(s.brokerCPU) }), format: dur, dir: lowerIsBetter},
		)
	}
	rows = append(rows,
		row{metric: "peak RSS (VmHWM)", values: medianBy(runs, func(r serverRun) float64 { return float64(r.peakRSS) }), format: mib, dir: lowerIsBetter, target: 0.1},
		row{metric: "cold start", values: medianBy(runs, func(r serverRun) float64 { return float64(r.coldStart) }), format: dur, dir: lowerIsBetter, absTarget: float64(50 * time.Millisecond)},
	)
	return rows
}

func medianBy(runs map[string][]serverRun, f func(serverRun) float64) map[string]float64 {
	out := make(map[string]float64, len(runs))
	for name, rs := range runs {
		vals := make([]float64, len(rs))
		for i, r := range rs {
			vals[i] = f(r)
		}
		out[name] = median(vals)
	}
	return out
}

// ratioTo is the row's Brook value over server other's, if both are known
// and other's is not zero.
func (r row) ratioTo(other string) (float64, bool) {
	b, hasB := r.values["brook"]
	v, hasV := r.values[other]
	if !hasB || !hasV || v == 0 {
		return 0, false
	}
	return b / v, true
}

// ratioCell renders the Brook/other ratio; "-" where there is none.
func (r row) ratioCell(other string) string {
	x, ok := r.ratioTo(other)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// verdict renders a row's Brook/Kafka ratio and whether it meets the
// target; "-" where a server is missing or there is no target.
func (r row) verdict() (ratio, target, met string) {
	ratio, target, met = r.ratioCell("kafka"), "-", "-"
	if x, ok := r.ratioTo("kafka"); ok && r.target > 0 {
		if r.dir == higherIsBetter {
			target = fmt.Sprintf(">= %.2fx", r.target)
			met = yesNo(x >= r.target)
		} else {
			target = fmt.Sprintf("<= %.2fx", r.target)
			met = yesNo(x <= r.target)
		}
	}
	if b, hasB := r.values["brook"]; r.absTarget > 0 && hasB {
		target = "< " + r.format(r.absTarget)
		met = yesNo(b < r.absTarget)
	}
	return ratio, target, met
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// printTable writes the rows as a Markdown table, ready for
// docs/benchmarks.md. With kfake, a kfake column and a Brook/kfake ratio
// column join the others; the target and met columns stay Brook/Kafka's.
func printTable(w io.Writer, rows []row, kfake bool) {
	cell := func(r row, name string) string {
		v, ok := r.values[name]
		if !ok {
			return "-"
		}
		return r.format(v)
	}
	if !kfake {
		fmt.Fprintln(w, "| metric | Brook | Kafka | Brook/Kafka | target | met |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---|---|")
		for _, r := range rows {
			ratio, target, met := r.verdict()
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.metric, cell(r, "brook"), cell(r, "kafka"), ratio, target, met)
		}
		return
	}
	fmt.Fprintln(w, "| metric | Brook | Kafka | kfake | Brook/Kafka | Brook/kfake | target | met |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---|")
	for _, r := range rows {
		ratio, target, met := r.verdict()
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.metric, cell(r, "brook"), cell(r, "kafka"), cell(r, serverKfake),
			ratio, r.ratioCell(serverKfake), target, met)
	}
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, for the
// record: on a shared machine a round's rates follow them.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}
