package scale

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkConnections: -scale.connections idle client connections to one
// broker, each of which sent one ApiVersions request (so the broker holds
// a session for it). It reports the broker's RSS per connection, and the
// produce latency (acks=all, one 100-byte record at a time) of one active
// client before and while the idle connections are open.
func BenchmarkConnections(b *testing.B) {
	n := *connections
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	// Go raises the soft limit to the hard one at start; say what it is.
	fmt.Printf("scale: %d connections, RLIMIT_NOFILE %d/%d\n", n, lim.Cur, lim.Max)
	if uint64(n)+200 > lim.Cur {
		b.Fatalf("%d connections need more descriptors than RLIMIT_NOFILE %d allows", n, lim.Cur)
	}
	p := testutil.StartBrook(b, brookBin, map[string]string{"num.partitions": "1"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.DefaultProduceTopic("active"), kgo.AllowAutoTopicCreation())
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	produce := func(phase string) {
		value := make([]byte, 100)
		var lat []time.Duration
		for i := 0; i < *produceRecords; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			start := time.Now()
			err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
			lat = append(lat, time.Since(start))
			cancel()
			if err != nil {
				b.Fatalf("produce: %v", err)
			}
		}
		report(b, "produce-p50-"+phase, ms(percentile(lat, 50)), "ms")
		report(b, "produce-p99-"+phase, ms(percentile(lat, 99)), "ms")
	}
	produce("warmup")
	produce("alone")
	rss0 := rss(b, p.PID())

	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", p.Addr(), 30*time.Second)
		if err != nil {
			b.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if err := apiVersions(c, int32(i)); err != nil {
			b.Fatalf("connection %d: ApiVersions: %v", i, err)
		}
	}
	report(b, "open-connections", ms(time.Since(start)), "ms")
	time.Sleep(3 * time.Second) // idle
	rss1 := rss(b, p.PID())
	report(b, "rss-with-connections", mib(rss1), "MiB")
	report(b, "rss-per-connection", float64(rss1-rss0)/float64(n)/1024, "KiB")
	report(b, "broker-fds", float64(openFiles(b, p.PID())), "fds")
	produce("with-idle-connections")
	// Every idle connection still works afterwards.
	for i, c := range conns {
		if err := apiVersions(c, int32(i)); err != nil {
			b.Fatalf("idle connection %d after the run: %v", i, err)
		}
	}
}

// apiVersions sends ApiVersions v0 on c and reads the answer.
func apiVersions(c net.Conn, corr int32) error {
	var req []byte
	req = binary.BigEndian.AppendUint32(req, 0) // size, set below
	req = binary.BigEndian.AppendUint16(req, 18)
	req = binary.BigEndian.AppendUint16(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(corr))
	req = binary.BigEndian.AppendUint16(req, 5)
	req = append(req, "scale"...)
	binary.BigEndian.PutUint32(req, uint32(len(req)-4))
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(req); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	_, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(hdr[:]))-4)
	return err
}
