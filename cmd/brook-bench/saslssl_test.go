package main

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestSASLSSLWorkload runs a small workload against a real Brook over the
// SASL_SSL listener --security sasl_ssl adds: the user is created over
// PLAINTEXT, then every client (admin, producer, both consumers) uses
// TLS and SCRAM-SHA-512 and reads back all it wrote.
func TestSASLSSLWorkload(t *testing.T) {
	bin, remove, err := testutil.BrookBinary()
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	sec, err := newBenchTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, addr, _, err := newServerDir("brook")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := brookSpec(bin, dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	saslPort := testutil.FreePort(t)
	if err := sec.secure(&spec, dir, addr, saslPort); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := startServer(ctx, spec, dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(saslPort))
	if err := sec.createBenchUser(ctx, addr, target); err != nil {
		t.Fatalf("%v\n%s", err, s.logTail(30))
	}
	o, err := parseFlags([]string{"--records", "2000", "--partitions", "2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.clientOpts = sec.clientOpts()
	res, err := benchOnce(ctx, o, []string{target}, "all")
	if err != nil {
		t.Fatalf("workload over SASL_SSL: %v\n%s", err, s.logTail(30))
	}
	if res.produce.records != 2000 || len(res.latencies) != 2000 || res.consume.records != 2001 {
		t.Errorf("produced %d, latencies %d, consumed %d; want 2000, 2000, 2001 (with the warm-up record)",
			res.produce.records, len(res.latencies), res.consume.records)
	}
	// Without the client settings the SASL_SSL listener does not serve.
	plain, err := kgo.NewClient(kgo.SeedBrokers(target))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if err := plain.Ping(pctx); err == nil {
		t.Error("a PLAINTEXT client was served by the SASL_SSL listener")
	}
}
