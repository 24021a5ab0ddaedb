package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The clients a consume pass can read with. One franz-go consumer is
// client-bound (it sends the next fetch only once the last one is polled,
// and decodes every record), so to load the broker a pass runs several
// clients at once, and other clients check that what is measured is the
// broker and not one client's habits.
const (
	clientFranzGo = "franz-go" // N franz-go clients in this process, a disjoint share of the partitions each
	clientKcat    = "kcat"     // N kcat (librdkafka) processes, each reading every partition
	clientPerf    = "perf"     // N Kafka ConsumerPerformance JVMs, each reading every partition
)

// defaultConsume is the consume pass brook-bench always ran: one franz-go
// client reading the whole topic.
const defaultConsume = clientFranzGo + ":1"

// consumePass is one read of the topic from its start after the produce:
// clients of one kind, all at once.
type consumePass struct {
	client    string
	consumers int
}

func (p consumePass) String() string { return fmt.Sprintf("%s x%d", p.client, p.consumers) }

// parseConsumePasses parses --consume, a comma-separated list of
// CLIENT:N (CLIENT alone means N=1), run in order after each produce.
func parseConsumePasses(s string) ([]consumePass, error) {
	var out []consumePass
	for _, item := range strings.Split(s, ",") {
		client, n, hasN := strings.Cut(item, ":")
		p := consumePass{client: client, consumers: 1}
		if hasN {
			var err error
			if p.consumers, err = strconv.Atoi(n); err != nil || p.consumers <= 0 {
				return nil, fmt.Errorf("--consume %q: %q is not a positive number of consumers", s, n)
			}
		}
		switch client {
		case clientFranzGo, clientKcat, clientPerf:
		default:
			return nil, fmt.Errorf("--consume %q: client %q: want franz-go, kcat or perf", s, client)
		}
		for _, q := range out {
			if q == p {
				return nil, fmt.Errorf("--consume %q: %v twice", s, p)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// checkConsumePasses rejects passes the workload cannot run: a disjoint
// split needs a partition per client, and the passes other than one
// franz-go client know where the topic ends from its end offsets, which a
// transactional topic's markers put past its last record.
func checkConsumePasses(o options, passes []consumePass) error {
	for _, p := range passes {
		if p.client == clientFranzGo && p.consumers > o.partitions {
			return fmt.Errorf("--consume %v: more clients than the %d partitions to share", p, o.partitions)
		}
		if p == (consumePass{clientFranzGo, 1}) {
			continue
		}
		if modes, _ := acksModes(o.acks); slices.Contains(modes, acksTxn) || slices.Contains(modes, "0") {
			return fmt.Errorf("--consume %v: only with --acks 1 or all (its end is the topic's end offsets)", p)
		}
		if p.client != clientFranzGo && o.security != securityPlaintext {
			return fmt.Errorf("--consume %v: only over plaintext", p)
		}
	}
	return nil
}

// partitionShares deals partitions 0..partitions-1 to n clients in turn,
// so the shares are disjoint, cover every partition and differ in size by
// at most one.
func partitionShares(partitions, n int) [][]int32 {
	shares := make([][]int32, n)
	for p := 0; p < partitions; p++ {
		shares[p%n] = append(shares[p%n], int32(p))
	}
	return shares
}

// passResult is one consume pass and what it cost the broker.
type passResult struct {
	pass consumePass
	tp   throughput
	// brokerCPU is the server's CPU time over the pass; 0 when unknown
	// (--brokers names a server this program did not start).
	brokerCPU cpuTimes
}

// cpuPerGiB is the broker's CPU seconds per GiB of values read; 0 when
// unknown.
func (r passResult) cpuPerGiB() float64 { return r.perGiB(r.brokerCPU.total()) }

// systemPerGiB is cpuPerGiB's part spent in the kernel.
func (r passResult) systemPerGiB() float64 { return r.perGiB(r.brokerCPU.system) }

func (r passResult) perGiB(d time.Duration) float64 {
	if r.tp.bytes == 0 {
		return 0
	}
	return d.Seconds() / (float64(r.tp.bytes) / (1 << 30))
}

// runConsumePass reads the whole topic (records values of recordSize,
// produced and acknowledged) with pass's clients.
func runConsumePass(ctx context.Context, o options, pass consumePass, seeds []string, topic string, records int, readCommitted bool) (throughput, error) {
	switch {
	case pass == consumePass{clientFranzGo, 1}:
		return consumeAll(ctx, seeds, topic, records, readCommitted, o.clientOpts...)
	case pass.client == clientFranzGo:
		return consumeSplit(ctx, seeds, topic, partitionShares(o.partitions, pass.consumers), o.clientOpts...)
	case pass.client == clientKcat:
		return consumeKcat(ctx, seeds, topic, pass.consumers, records, o.recordSize)
	default:
		return consumePerf(ctx, o.perfScript, seeds, topic, pass.consumers, records)
	}
}

// consumeSplit reads the topic with one franz-go client per share of the
// partitions, all at once, each until it reaches its partitions' end
// offsets (the topic is no longer written).
func consumeSplit(ctx context.Context, seeds []string, topic string, shares [][]int32, opts ...kgo.Opt) (throughput, error) {
	ends, err := endOffsets(ctx, seeds, topic, opts...)
	if err != nil {
		return throughput{}, err
	}
	start := time.Now()
	cpuStart := selfCPU()
	var fc fetchCounter
	type share struct {
		records int
		bytes   int64
		err     error
	}
	got := make([]share, len(shares))
	var wg sync.WaitGroup
	for i, parts := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i].records, got[i].bytes, got[i].err = consumePartitions(ctx, seeds, topic, parts, ends, append([]kgo.Opt{kgo.WithHooks(&fc)}, opts...)...)
		}()
	}
	wg.Wait()
	t := throughput{elapsed: time.Since(start), fetches: fc.responses.Load(), fetchBytes: fc.bytes.Load(),
		fetchBatches: fc.batches.Load(), fetchRecords: fc.records.Load(), clientCPU: selfCPU() - cpuStart}
	var errs []error
	for i, s := range got {
		t.records += s.records
		t.bytes += s.bytes
		if s.err != nil {
			errs = append(errs, fmt.Errorf("client %d of %d: %w", i+1, len(shares), s.err))
		}
	}
	return t, errors.Join(errs...)
}

func endOffsets(ctx context.Context, seeds []string, topic string, opts ...kgo.Opt) (map[int32]int64, error) {
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(seeds...))...)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends, nil
}

// consumePartitions reads parts of topic from their start until each
// reaches its end offset in ends.
func consumePartitions(ctx context.Context, seeds []string, topic string, parts []int32, ends map[int32]int64, opts ...kgo.Opt) (records int, bytes int64, err error) {
	assign := map[int32]kgo.Offset{}
	left := 0
	next := map[int32]int64{}
	for _, p := range parts {
		assign[p] = kgo.NewOffset().AtStart()
		if ends[p] > 0 {
			left++
		}
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))...)
	if err != nil {
		return 0, 0, fmt.Errorf("consumer client: %w", err)
	}
	defer cl.Close()
	for left > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return records, bytes, fmt.Errorf("after %d records: %w", records, err)
		}
		if err := fetchesErr(fetches); err != nil {
			return records, bytes, err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			records++
			bytes += int64(len(r.Value))
			if next[r.Partition] < ends[r.Partition] && r.Offset+1 >= ends[r.Partition] {
				left--
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	return records, bytes, nil
}

// consumeKcat runs n kcat processes at once, each reading every partition
// of topic from the start to its end (-e), printing to /dev/null. kcat
// prints no count, so each is taken to have read the records produced
// (values of recordSize); one that fails fails the pass. The client CPU
// is the processes' own.
func consumeKcat(ctx context.Context, seeds []string, topic string, n, records, recordSize int) (throughput, error) {
	args := []string{"-C", "-b", strings.Join(seeds, ","), "-t", topic, "-o", "beginning", "-e", "-q"}
	t, err := runProcesses(n, func() *exec.Cmd { return exec.CommandContext(ctx, "kcat", args...) }, nil)
	t.records = n * records
	t.bytes = int64(t.records) * int64(recordSize)
	return t, err
}

// consumePerf runs n Kafka ConsumerPerformance tools at once (script is
// compat-tests/bin/kafka-consumer-perf-test.sh), each reading every
// partition of topic, records in all, in a group of its own. A JVM takes
// seconds to start, so the rate is the tools' own: the values they read
// over the longest fetch time any of them reports (from the first record
// to the last, without the JVM's start or the group join).
func consumePerf(ctx context.Context, script string, seeds []string, topic string, n, records int) (throughput, error) {
	args := []string{"--bootstrap-server", strings.Join(seeds, ","), "--topic", topic,
		"--num-records", strconv.Itoa(records), "--timeout", "120000"}
	var mu sync.Mutex
	var fetchTime time.Duration
	var bytes int64
	parse := func(out []byte) error {
		mib, ms, err := parsePerfLine(out)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		bytes += int64(mib * mebibyte)
		fetchTime = max(fetchTime, ms)
		return nil
	}
	t, err := runProcesses(n, func() *exec.Cmd { return exec.CommandContext(ctx, script, args...) }, parse)
	t.bytes, t.elapsed, t.records = bytes, fetchTime, n*records
	return t, err
}

// parsePerfLine reads ConsumerPerformance's result line, "start.time,
// end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
// rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec", the
// last line of its output: the MiB read (its MB are 2^20 bytes of values)
// and the fetch time.
func parsePerfLine(out []byte) (mib float64, fetchTime time.Duration, err error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	fields := strings.Split(last, ",")
	if len(fields) != 10 {
		return 0, 0, fmt.Errorf("ConsumerPerformance result %q: %d fields, want 10", last, len(fields))
	}
	mib, err = strconv.ParseFloat(strings.TrimSpace(fields[2]), 64)
	if err != nil {
		return 0, 0, fmt.Errorf("ConsumerPerformance result %q: MB: %w", last, err)
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(fields[7]), 10, 64)
	if err != nil || ms < 0 {
		return 0, 0, fmt.Errorf("ConsumerPerformance result %q: bad fetch.time.ms", last)
	}
	return mib, time.Duration(ms) * time.Millisecond, nil
}

// runProcesses starts n commands from mk at once and waits for all; the
// stdout of each goes to parse, if set, else to /dev/null. The
// throughput's elapsed time runs from the first start to the last exit,
// and its client CPU is the processes' user + system time; the caller
// fills in what was read.
func runProcesses(n int, mk func() *exec.Cmd, parse func([]byte) error) (throughput, error) {
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	errOuts := make([]bytes.Buffer, n)
	start := time.Now()
	for i := range cmds {
		cmds[i] = mk()
		if parse != nil {
			cmds[i].Stdout = &outs[i]
		}
		cmds[i].Stderr = &errOuts[i]
		if err := cmds[i].Start(); err != nil {
			for _, c := range cmds[:i] {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			return throughput{}, fmt.Errorf("start %s: %w", cmds[i].Path, err)
		}
	}
	var t throughput
	var errs []error
	for i, c := range cmds {
		err := c.Wait()
		if c.ProcessState != nil {
			t.clientCPU += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		}
		if err == nil && parse != nil {
			err = parse(outs[i].Bytes())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %d of %d: %w: %s", c.Path, i+1, n, err, strings.TrimSpace(errOuts[i].String())))
		}
	}
	t.elapsed = time.Since(start)
	return t, errors.Join(errs...)
}
