package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

// serverKfake is --compare's name for franz-go's in-memory fake broker,
// kfake: the performance goals that are set relative to it ("broker CPU
// per GiB at most kfake's") are measured in the same run as Brook.
const serverKfake = "kfake"

// serveKfakeFlag is the hidden mode in which brook-bench is the kfake
// server itself: --compare runs this executable with it as a child
// process, so kfake's CPU time and peak RSS are read from /proc like any
// other server's. It is not in the flag set, so --help does not offer it.
const serveKfakeFlag = "--serve-kfake"

// parseServeKfake reports whether args ask for the kfake serving mode,
// as "--serve-kfake ADDR" or "--serve-kfake=ADDR", and the address to
// listen on; the mode takes no other argument.
func parseServeKfake(args []string) (addr string, ok bool, err error) {
	if len(args) == 0 {
		return "", false, nil
	}
	name, value, hasValue := strings.Cut(args[0], "=")
	if name != serveKfakeFlag && name != serveKfakeFlag[1:] {
		return "", false, nil
	}
	switch {
	case hasValue && len(args) == 1:
		addr = value
	case !hasValue && len(args) == 2:
		addr = args[1]
	default:
		return "", true, fmt.Errorf("%s takes one address and nothing else, got %q", serveKfakeFlag, args)
	}
	if _, err := kfakePort(addr); err != nil {
		return "", true, err
	}
	return addr, true, nil
}

// kfakePort is addr's port. kfake listens on 127.0.0.1 only (and shows
// its listener's address in Metadata), so any other host is refused
// rather than silently served elsewhere.
func kfakePort(addr string) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", serveKfakeFlag, addr, err)
	}
	if host != "127.0.0.1" {
		return 0, fmt.Errorf("%s %q: kfake listens on 127.0.0.1 only", serveKfakeFlag, addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return 0, fmt.Errorf("%s %q: want a port from 1 to 65535", serveKfakeFlag, addr)
	}
	return port, nil
}

// serveKfake runs a one-broker kfake cluster on addr until ctx ends, then
// closes it. Without kfake.DataDir the cluster keeps its logs in memory:
// it writes nothing to disk.
func serveKfake(ctx context.Context, addr string, log io.Writer) error {
	port, err := kfakePort(addr)
	if err != nil {
		return err
	}
	// One broker on the given port: it is the partitions' leader, the
	// group and transaction coordinator and the controller CreateTopics
	// must reach, and its listener's address is what Metadata returns.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port))
	if err != nil {
		return fmt.Errorf("start kfake on %s: %w", addr, err)
	}
	defer c.Close()
	fmt.Fprintf(log, "brook-bench: kfake (franz-go's in-memory fake broker, one broker) listening on %s\n", strings.Join(c.ListenAddrs(), ","))
	<-ctx.Done()
	return nil
}

// serveKfakeMain is the whole serving mode, for main and for the test
// binary standing in for brook-bench: serve until SIGTERM or SIGINT and
// return the process's exit status, 0 after a clean shutdown.
func serveKfakeMain(addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serveKfake(ctx, addr, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "brook-bench:", err)
		return 1
	}
	return 0
}

// kfakeSpec runs this executable in its kfake serving mode on addr.
func kfakeSpec(addr string) (serverSpec, error) {
	self, err := os.Executable()
	if err != nil {
		return serverSpec{}, fmt.Errorf("find own binary to serve kfake: %w", err)
	}
	return serverSpec{name: serverKfake, argv: []string{self, serveKfakeFlag, addr}}, nil
}

// checkKfake refuses, before any server starts, the workloads that kfake
// cannot serve as brook-bench runs them.
func checkKfake(o options) error {
	// --security sasl_ssl gives each server a second listener (the
	// plaintext one creates the SCRAM user and answers the readiness
	// probe); a kfake broker has exactly one listener.
	if o.security != securityPlaintext {
		return fmt.Errorf("--compare %s: kfake serves plaintext only here (one listener per broker): drop --security %s", serverKfake, o.security)
	}
	// The cluster has one broker, and kfake refuses a topic with more
	// replicas than brokers.
	if o.replicationFactor > 1 {
		return errors.New("--compare kfake: kfake runs one broker: --replication-factor must be 1")
	}
	return nil
}
