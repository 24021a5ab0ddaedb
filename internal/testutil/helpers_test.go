package testutil

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestFreePortIsBindable(t *testing.T) {
	port := FreePort(t)
	if port <= 0 || port > 65535 {
		t.Fatalf("FreePort = %d, want 1..65535", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on FreePort's %d: %v", port, err)
	}
	ln.Close()
}

func TestListenerPort(t *testing.T) {
	tests := []struct {
		listeners string
		want      int
		wantErr   bool
	}{
		{"PLAINTEXT://127.0.0.1:9092", 9092, false},
		{"PLAINTEXT://:19092,CONTROLLER://127.0.0.1:9093", 19092, false},
		{"PLAINTEXT://[::1]:9094", 9094, false},
		{"127.0.0.1:9092", 0, true},
		{"PLAINTEXT://127.0.0.1", 0, true},
		{"PLAINTEXT://127.0.0.1:http", 0, true},
	}
	for _, tt := range tests {
		got, err := listenerPort(tt.listeners)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("listenerPort(%q) = %d, %v; want %d, error %v", tt.listeners, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestPropertiesOverridesWin(t *testing.T) {
	p := &Process{dataDir: "/tmp/d"}
	props, err := p.properties(map[string]string{
		"broker.id":         "7",
		"listeners":         "PLAINTEXT://127.0.0.1:4321",
		"num.partitions":    "3",
		"zookeeper.connect": "127.0.0.1:2181/brook",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"broker.id":                        "7",
		"listeners":                        "PLAINTEXT://127.0.0.1:4321",
		"num.partitions":                   "3",
		"zookeeper.connect":                "127.0.0.1:2181/brook",
		"log.dirs":                         "/tmp/d",
		"group.initial.rebalance.delay.ms": "0",
	}
	if len(props) != len(want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("properties[%q] = %q, want %q", k, props[k], v)
		}
	}
	if p.Port() != 4321 {
		t.Errorf("Port() = %d, want 4321 from the overridden listeners", p.Port())
	}

	path := filepath.Join(t.TempDir(), "server.properties")
	if err := writeProperties(path, props); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || props[k] != v {
			t.Errorf("written line %q does not match properties", line)
		}
		keys = append(keys, k)
	}
	if len(keys) != len(props) {
		t.Errorf("wrote %d keys, want %d", len(keys), len(props))
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("keys not sorted: %q before %q", keys[i-1], keys[i])
		}
	}
}

func TestPropertiesPicksAFreePort(t *testing.T) {
	p := &Process{dataDir: "/tmp/d"}
	props, err := p.properties(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "PLAINTEXT://127.0.0.1:" + strconv.Itoa(p.Port())
	if p.Port() == 0 || props["listeners"] != want {
		t.Errorf("listeners = %q, port %d; want %q", props["listeners"], p.Port(), want)
	}
}

func TestLogTail(t *testing.T) {
	tests := []struct {
		name    string
		content string
		n       int
		want    string
	}{
		{"empty", "", 3, ""},
		{"fewer lines than n", "a\nb\n", 3, "a\nb\n"},
		{"last n", "a\nb\nc\nd\n", 2, "c\nd\n"},
		{"no final newline", "a\nb\nc", 2, "b\nc"},
		{"zero", "a\nb\n", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Process{logPath: filepath.Join(t.TempDir(), "brook.log")}
			if err := os.WriteFile(p.logPath, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := p.LogTail(tt.n); got != tt.want {
				t.Errorf("LogTail(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

func TestModuleRootHoldsGoMod(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "module github.com/brook-mq/brook\n") {
		t.Errorf("go.mod at %s is not Brook's", root)
	}
}

func TestBrookBinaryHonoursBrookBin(t *testing.T) {
	t.Setenv("BROOK_BIN", fakeBin)
	bin, remove, err := BrookBinary()
	if err != nil {
		t.Fatal(err)
	}
	remove()
	if bin != fakeBin {
		t.Errorf("BrookBinary = %q, want BROOK_BIN %q", bin, fakeBin)
	}
	if _, err := os.Stat(fakeBin); err != nil {
		t.Errorf("remove deleted BROOK_BIN's binary: %v", err)
	}
	if got := BuildBrook(t); got != fakeBin {
		t.Errorf("BuildBrook = %q, want BROOK_BIN %q", got, fakeBin)
	}

	t.Setenv("BROOK_BIN", filepath.Join(t.TempDir(), "missing"))
	if _, _, err := BrookBinary(); err == nil {
		t.Error("BrookBinary with a missing BROOK_BIN: err = nil")
	}
}
