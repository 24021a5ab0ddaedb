package testutil

import (
	"net"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free when asked. Another
// process may take it before the caller binds it; StartBrook retries with a
// new port when that happens.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	return port
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
