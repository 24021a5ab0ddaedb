package broker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// emfileListener fails every Accept with EMFILE, as a listener does when
// the process is out of file descriptors.
type emfileListener struct {
	net.Listener
	accepts int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.accepts++
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
}

// TestAcceptBacksOff checks that accept errors are retried after pauses
// doubling from 5 ms to 1 s, as net/http does, rather than at once.
func TestAcceptBacksOff(t *testing.T) {
	b := &Broker{logger: testLogger()}
	ln := &emfileListener{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pauses []time.Duration
	sleep := func(_ context.Context, d time.Duration) bool {
		pauses = append(pauses, d)
		if len(pauses) == 10 {
			cancel()
			return false
		}
		return true
	}
	var conns sync.WaitGroup
	b.acceptLoopWith(ctx, boundListener{name: "PLAINTEXT", ln: ln}, &conns, sleep)
	ms := time.Millisecond
	want := []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}
	if !slices.Equal(pauses, want) {
		t.Fatalf("pauses after EMFILE: %v, want %v", pauses, want)
	}
	if ln.accepts != len(want) {
		t.Fatalf("%d accepts for %d pauses: %s", ln.accepts, len(want), fmt.Sprint(pauses))
	}
}
