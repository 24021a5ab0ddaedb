// Command brook-bench is a load program for Brook (or any Kafka broker):
// it produces records with franz-go and reports produce throughput,
// end-to-end latency percentiles and consume throughput.
//
// Without --brokers it starts its own brook from --brook-bin on a free
// 127.0.0.1 port with data in a temp dir, and stops it by PID at the end.
//
// A --kafka flag to compare against Apache Kafka on the same machine is
// planned for a later issue and not implemented.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
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
	fs.StringVar(&o.acks, "acks", "1", "producer acks: 0, 1, all, or both (runs 1 then all)")
	fs.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	fs.DurationVar(&o.linger, "linger", time.Millisecond, "producer linger")
	fs.IntVar(&o.batchBytes, "batch-bytes", 16384, "producer max batch size in bytes")
	fs.DurationVar(&o.fetchMaxWait, "fetch-max-wait", 500*time.Millisecond, "consumer fetch.max.wait (Java client default)")
	fs.IntVar(&o.maxInflight, "max-inflight", 1000, "records handed to the client and not yet acknowledged, at most; the\nsend time is stamped when a record gets a slot, so latency includes at most this much queueing")
	fs.IntVar(&o.rate, "rate", 0, "records/s to produce; 0 produces as fast as acknowledgements allow")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.records <= 0 || o.partitions <= 0 || o.replicationFactor <= 0 || o.batchBytes <= 0 || o.maxInflight <= 0 {
		return o, errors.New("--records, --partitions, --replication-factor, --batch-bytes and --max-inflight must be positive")
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
	return o, nil
}

// acksModes expands --acks into the settings to run, in order.
func acksModes(acks string) ([]string, error) {
	switch acks {
	case "0", "1", "all":
		return []string{acks}, nil
	case "both":
		return []string{"1", "all"}, nil
	case "-1":
		return []string{"all"}, nil
	}
	return nil, fmt.Errorf("--acks %q: want 0, 1, all or both", acks)
}

func main() {
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
	brokers := o.brokers
	if brokers == "" {
		b, err := startBrook(ctx, o.brookBin)
		if err != nil {
			return err
		}
		defer func() {
			if stopErr := b.stop(); stopErr != nil && err == nil {
				err = stopErr
			}
		}()
		brokers = b.addr
		fmt.Fprintf(out, "brook-bench: started %s pid %d on %s (data in %s)\n", o.brookBin, b.pid(), b.addr, b.dir)
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
