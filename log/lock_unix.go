//go:build unix

package log

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive, non-blocking flock on <dir>/.lock, as Kafka
// does, so that two brokers never share a log dir. The lock lives as long
// as the returned file stays open.
func lockDir(dir string) (*os.File, error) {
	name := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock log dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: log dir %s is locked by another process: %w", ErrDirLocked, dir, err)
	}
	return f, nil
}
