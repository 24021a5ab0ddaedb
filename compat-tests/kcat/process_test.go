package kcat

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// stopTimeout is how long a kcat consumer may take to leave its group and
// commit after SIGTERM.
const stopTimeout = 30 * time.Second

// background is a kcat process that runs until stop.
type background struct {
	cmd            *exec.Cmd
	stdout, stderr testutil.SyncBuffer
	done           chan struct{}
	err            error
}

// startKcat starts kcat with args; the test's cleanup kills it if it still
// runs.
func startKcat(t *testing.T, args ...string) *background {
	t.Helper()
	b := &background{cmd: exec.Command("kcat", args...), done: make(chan struct{})}
	b.cmd.Stdout = &b.stdout
	b.cmd.Stderr = &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start kcat %v: %v", args, err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// stop sends SIGTERM, on which kcat closes its consumer (committing its
// offsets and leaving the group), and waits for it to exit.
func (b *background) stop() error {
	// A process that already exited reports os.ErrProcessDone; done tells.
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-b.done:
		return b.err
	case <-timer.C:
		_ = b.cmd.Process.Kill()
		<-b.done
		return errors.New("kcat did not exit within " + stopTimeout.String() + " of SIGTERM")
	}
}
