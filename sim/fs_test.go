package sim

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/brook-mq/brook/controller"
)

// TestSimFindsKeptBouncedBroker reverts the controller's handling of a
// bounced broker behind controller.Faults (a restarted broker may lead
// again at once, and a new controller does not look for brokers that
// restarted unseen) and checks that the seeds TestSim runs find it: with
// the simulated disk, a restart after a power failure has a cut log.
// Seed 1 finds it: a broker whose log a power failure emptied leads
// again after its restart, and the others' acknowledged records go.
func TestSimFindsKeptBouncedBroker(t *testing.T) {
	err := findsFaults(t, func(cfg *Config) { cfg.ControllerFaults = controller.Faults{KeepBouncedBroker: true} })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find the reverted bounce handling")
	}
	t.Logf("found: %v", err)
}

func testFS(t *testing.T) (*FS, func() time.Time) {
	t.Helper()
	now := func() time.Time { return simStart }
	return NewFS(7, now), now
}

// TestFSPowerFailureKeepsSynced: synced content and synced directory
// entries survive a power failure, unsynced ones do not, and a process
// crash keeps everything; handles of before a crash are dead.
func TestFSPowerFailureKeepsSynced(t *testing.T) {
	disk, _ := testFS(t)
	m := disk.Mount()
	if err := m.MkdirAll("/d/p", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/p/a", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("synced"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/", "/d", "/d/p"} {
		if err := m.SyncDir(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteAt([]byte("-lost"), 6); err != nil {
		t.Fatal(err)
	}
	g, err := m.OpenFile("/d/p/b", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(); err != nil { // content synced, entry not
		t.Fatal(err)
	}
	disk.Crash(false) // process crash: the page cache keeps everything
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, errDead) {
		t.Fatalf("write through a handle of before the crash: %v", err)
	}
	if _, err := m.ReadFile("/d/p/a"); !errors.Is(err, errDead) {
		t.Fatalf("read through a mount of before the crash: %v", err)
	}
	m = disk.Mount()
	if got, err := m.ReadFile("/d/p/a"); err != nil || string(got) != "synced-lost" {
		t.Fatalf("after a process crash: %q, %v", got, err)
	}
	// Every power failure of this seed draws again; whatever it keeps of
	// the unsynced write is a prefix, and the synced part is always there.
	for range 20 {
		disk.Crash(true)
		m = disk.Mount()
		got, err := m.ReadFile("/d/p/a")
		if err != nil || !bytes.HasPrefix([]byte("synced-lost"), got) || len(got) < len("synced") {
			t.Fatalf("after a power failure: %q, %v", got, err)
		}
		if _, err := m.Stat("/d/p/b"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a file whose directory entry was never synced survived: %v", err)
		}
	}
}

// TestFSPowerFailureDropsUnsynced: one seed's power failure loses the
// unsynced tail or tears its first write, never keeps a later write
// without the earlier ones, and replays the same for the same seed.
func TestFSPowerFailureDropsUnsynced(t *testing.T) {
	run := func(seed int64) []string {
		disk := NewFS(seed, func() time.Time { return simStart })
		var outcomes []string
		for range 30 {
			m := disk.Mount()
			if err := m.MkdirAll("/d", 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := m.OpenFile("/d/log", os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := m.SyncDir("/d"); err != nil {
				t.Fatal(err)
			}
			if err := m.SyncDir("/"); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("aaaa"), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("bbbb"), 4); err != nil {
				t.Fatal(err)
			}
			disk.Crash(true)
			got, err := disk.Mount().ReadFile("/d/log")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix([]byte("aaaabbbb"), got) {
				t.Fatalf("kept %q: not a prefix of the writes in order", got)
			}
			outcomes = append(outcomes, string(got))
		}
		return outcomes
	}
	a, b := run(3), run(3)
	seen := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("crash %d kept %q, then %q for the same seed", i, a[i], b[i])
		}
		seen[a[i]] = true
	}
	// Over 30 crashes: all lost, a torn first write, and some kept.
	if !seen[""] || len(seen) < 3 {
		t.Fatalf("outcomes %v: the crashes do not vary", seen)
	}
}

// TestSimRealDisk keeps Config.RealDisk working: a seed on real files
// (tmpfs when there is one), where a crash keeps every byte written.
func TestSimRealDisk(t *testing.T) {
	r := runSeed(simBase(t), 3, func(cfg *Config) { cfg.RealDisk = true }, 40)
	if r.err != nil {
		t.Fatalf("seed 3 on the real disk: %v\n%s", r.err, r.trace)
	}
	if r.stats.Acked == 0 || r.stats.Crashes == 0 {
		t.Fatalf("seed 3 did nothing: %+v", r.stats)
	}
}
