package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

const mebibyte = 1024 * 1024

type throughput struct {
	records int
	bytes   int64
	elapsed time.Duration
	// fetches and fetchBytes count the consumer's Fetch responses, when
	// it was a consume pass.
	fetches    int64
	fetchBytes int64
	// fetchBatches and fetchRecords are what the client decoded from
	// those responses (records include ones it skipped).
	fetchBatches int64
	fetchRecords int64
	clientCPU    time.Duration
}

func (t throughput) String() string {
	secs := t.elapsed.Seconds()
	if secs <= 0 {
		return fmt.Sprintf("%d records in %v", t.records, t.elapsed)
	}
	s := fmt.Sprintf("%d records in %.2fs = %.0f records/s, %.2f MB/s",
		t.records, secs, float64(t.records)/secs, float64(t.bytes)/mebibyte/secs)
	if t.fetches > 0 {
		n := float64(t.fetches)
		s += fmt.Sprintf(" (%d fetch responses, %.0f KiB, %.1f batches, %.0f records each; client CPU %v)", t.fetches,
			float64(t.fetchBytes)/1024/n, float64(t.fetchBatches)/n, float64(t.fetchRecords)/n, t.clientCPU.Round(time.Millisecond))
	} else if t.clientCPU > 0 {
		s += fmt.Sprintf(" (client CPU %v)", t.clientCPU.Round(time.Millisecond))
	}
	return s
}

// mbps is the throughput in MiB/s (printed as MB/s, as Kafka's perf tools
// do); 0 for no elapsed time.
func (t throughput) mbps() float64 {
	secs := t.elapsed.Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(t.bytes) / mebibyte / secs
}

// median is the lower middle of xs (the nearest-rank p50); 0 for none. It
// sorts a copy.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return sorted[(len(sorted)-1)/2]
}

type result struct {
	acks       string
	recordSize int
	produce    throughput
	consume    throughput
	// passes are the consume passes (--consume), the first of which is
	// consume.
	passes    []passResult
	latencies []time.Duration
	// commits times each commit of the transactional workload (flush and
	// EndTxn, as the Java producer's commitTransaction).
	commits []time.Duration
	note    string
	// produceOnly is set when nothing was consumed (--produce-only).
	produceOnly bool
}

func (r result) print(w io.Writer) {
	fmt.Fprintf(w, "acks=%-3s produce: %v\n", r.acks, r.produce)
	q := quantiles(r.latencies, 0.50, 0.99, 0.999, 1)
	switch {
	case r.produceOnly: // no latency consumer
	case q == nil:
		fmt.Fprintf(w, "acks=%-3s end-to-end latency: no records measured\n", r.acks)
	default:
		fmt.Fprintf(w, "acks=%-3s end-to-end latency (%d records): p50=%v p99=%v p999=%v max=%v\n",
			r.acks, len(r.latencies), round(q[0]), round(q[1]), round(q[2]), round(q[3]))
	}
	if q := quantiles(r.commits, 0.50, 0.99, 1); q != nil {
		fmt.Fprintf(w, "acks=%-3s commit latency (%d commits, flush + EndTxn): p50=%v p99=%v max=%v\n",
			r.acks, len(r.commits), round(q[0]), round(q[1]), round(q[2]))
	}
	if len(r.passes) == 0 && !r.produceOnly {
		fmt.Fprintf(w, "acks=%-3s consume from beginning: %v\n", r.acks, r.consume)
	}
	for _, p := range r.passes {
		fmt.Fprintf(w, "acks=%-3s consume from beginning, %v: %v\n", r.acks, p.pass, p.tp)
		if c := p.brokerCPU; c.total() > 0 {
			fmt.Fprintf(w, "acks=%-3s   broker CPU over the pass %v (user %v, system %v) = %.2f CPU-s per GiB read\n",
				r.acks, c.total().Round(time.Millisecond), c.user.Round(time.Millisecond), c.system.Round(time.Millisecond), p.cpuPerGiB())
		}
	}
	if r.note != "" {
		fmt.Fprintf(w, "acks=%-3s note: %s\n", r.acks, r.note)
	}
}

// quantiles returns, for each q in qs, the smallest sample with at least
// q of all samples at or below it (nearest rank); nil for no samples. It
// sorts a copy, so the caller's order is kept.
func quantiles(samples []time.Duration, qs ...float64) []time.Duration {
	if len(samples) == 0 {
		return nil
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	out := make([]time.Duration, len(qs))
	for i, q := range qs {
		// The epsilon keeps 0.99*1000 (990.0000000000001 in floating point)
		// at rank 990.
		rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
		rank = max(1, min(rank, len(sorted)))
		out[i] = sorted[rank-1]
	}
	return out
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
