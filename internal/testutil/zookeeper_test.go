package testutil

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestZooKeeperServesClients(t *testing.T) {
	z := StartZooKeeper(t)
	conn, _, err := zk.Connect([]string{z.Connect()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/brook-testutil", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create znode: %v\n%s", err, tailFile(z.logPath, 20))
	}
	data, _, err := conn.Get("/brook-testutil")
	if err != nil || string(data) != "x" {
		t.Fatalf("get znode = %q, %v; want x", data, err)
	}

	z.Stop()
	if err := srvr(z.Connect()); err == nil {
		t.Error("zookeeper still answers srvr after Stop")
	}
}

func TestZooKeeperRestartKeepsDataAndSessions(t *testing.T) {
	z := StartZooKeeper(t)
	conn, _, err := zk.Connect([]string{z.Connect()}, 8*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create ephemeral znode: %v", err)
	}
	before := z.PID()
	z.Restart()
	if z.PID() == 0 || z.PID() == before {
		t.Fatalf("PID after restart = %d, before %d; want a new running process", z.PID(), before)
	}
	// The client reconnects within its session timeout, so the session and
	// its ephemeral node outlive the restart.
	Eventually(t, 20*time.Second, func() error {
		ok, _, err := conn.Exists("/eph")
		if err != nil {
			return err
		}
		if !ok {
			t.Fatal("ephemeral znode gone after a short restart")
		}
		return nil
	})
}

// TestZooKeeperJVM: the JVM options asked for reach the server's java
// command line, in place of the cluster tests' small heap and collector.
func TestZooKeeperJVM(t *testing.T) {
	z := StartZooKeeperJVM(t, ZooKeeperJVM{Heap: "-Xmx512M -Xms512M", GC: "-XX:+UseG1GC"})
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(z.PID()) + "/cmdline")
	if err != nil {
		t.Fatalf("read the server's command line: %v", err)
	}
	args := strings.Split(string(cmdline), "\x00")
	for _, want := range []string{"-Xmx512M", "-XX:+UseG1GC"} {
		if !slices.Contains(args, want) {
			t.Errorf("java runs with %q, want %s among them", args, want)
		}
	}
	for _, unwanted := range []string{"-Xmx256m", "-XX:+UseSerialGC"} {
		if slices.Contains(args, unwanted) {
			t.Errorf("java runs with %q, want no %s", args, unwanted)
		}
	}
}
