//go:build !unix

package log

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir only creates <dir>/.lock where flock is unavailable.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock log dir %s: %w", dir, err)
	}
	return f, nil
}
