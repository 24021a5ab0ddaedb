//go:build linux

package log

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestOSFSFilesAsOS: OSFS's poller-free open and read behave as os's: a
// missing file is fs.ErrNotExist, a file longer than the first read buffer
// comes back whole, and the open flags (create, append) hold.
func TestOSFSFilesAsOS(t *testing.T) {
	dir := t.TempDir()
	var fsys OSFS
	if _, err := fsys.ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := fsys.OpenFile(filepath.Join(dir, "missing"), os.O_RDONLY, 0); !os.IsNotExist(err) {
		t.Fatalf("open of a missing file: %v, want not-exist", err)
	}
	want := bytes.Repeat([]byte("0123456789"), 300)
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, want[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(want[1000:]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := fsys.ReadFile(name)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(want))
	}
	created := filepath.Join(dir, "new")
	f, err = fsys.OpenFile(created, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, err := os.Stat(created); err != nil || st.Mode().Perm()&^0o640 != 0 {
		t.Fatalf("created file: %v, %v", st, err)
	}
}
