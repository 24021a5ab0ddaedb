package testutil

import (
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
