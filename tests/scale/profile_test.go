package scale

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// profileDir, when set, makes the failover benchmark's Brook brokers serve
// pprof and saves CPU profiles of the phases it times into the dir, with
// each broker's log at the end: the figures say how long, these say where.
var (
	profileDir     = flag.String("scale.profile-dir", "", "the failover benchmark (brook): save CPU profiles of the failover and the rejoin, and the brokers' logs, into `DIR`")
	profileSeconds = flag.Int("scale.profile-seconds", 10, "with -scale.profile-dir: length of each CPU profile")
)

// profiler takes CPU profiles of brokers through their metrics listeners.
type profiler struct {
	dir   string
	ports map[int32]int
	wg    sync.WaitGroup
	// ctx ends with the benchmark, so that a failed one leaves no
	// profile request running behind it.
	ctx context.Context
}

// newProfiler picks a metrics port per broker; nil without
// -scale.profile-dir.
func newProfiler(b *testing.B, ids []int32) *profiler {
	if *profileDir == "" {
		return nil
	}
	if err := os.MkdirAll(*profileDir, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &profiler{dir: *profileDir, ports: map[int32]int{}, ctx: ctx}
	b.Cleanup(func() {
		cancel()
		p.wg.Wait()
	})
	for _, id := range ids {
		p.ports[id] = testutil.FreePort(b)
	}
	return p
}

// props adds the metrics listener and pprof to broker id's settings.
func (p *profiler) props(id int32, props map[string]string) {
	if p == nil {
		return
	}
	props["brook.metrics.listener"] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.ports[id]))
	props["brook.metrics.pprof.enable"] = "true"
}

// start profiles each of ids for -scale.profile-seconds in the
// background, into DIR/PHASE-broker-ID.pprof. A broker still starting is
// retried until its listener answers, so a restarted broker's profile
// begins as soon as it serves.
func (p *profiler) start(phase string, ids ...int32) {
	if p == nil {
		return
	}
	for _, id := range ids {
		p.wg.Go(func() {
			path := filepath.Join(p.dir, fmt.Sprintf("%s-broker-%d.pprof", phase, id))
			url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", p.ports[id], *profileSeconds)
			deadline := time.Now().Add(5 * time.Minute)
			for time.Now().Before(deadline) && p.ctx.Err() == nil {
				err := fetchTo(p.ctx, url, path, time.Duration(*profileSeconds+30)*time.Second)
				if err == nil {
					fmt.Printf("scale: profile %s\n", path)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			fmt.Printf("scale: no profile of broker %d for %s\n", id, phase)
		})
	}
}

// finish waits for the profiles and copies each broker's log beside them.
func (p *profiler) finish(brokers map[int32]*testutil.Process) {
	if p == nil {
		return
	}
	p.wg.Wait()
	for id, pr := range brokers {
		data, err := os.ReadFile(pr.LogPath())
		if err == nil {
			err = os.WriteFile(filepath.Join(p.dir, fmt.Sprintf("broker-%d.log", id)), data, 0o644)
		}
		if err != nil {
			fmt.Printf("scale: log of broker %d: %v\n", id, err)
		}
	}
}

func fetchTo(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// finishPhase waits for the phase's profiles, so that the next phase's
// do not overlap them (a process serves one CPU profile at a time).
func (p *profiler) finishPhase() {
	if p != nil {
		p.wg.Wait()
	}
}
