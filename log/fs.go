package log

import (
	"fmt"
	"io"
	"os"
	"time"
)

// FS is the file system a log works on: every file and directory
// operation of this package goes through it, so that a simulation can run
// the log code unchanged over a file system that loses unsynced writes at
// a crash (sim/fs.go). OSFS, the default, is the operating system's.
//
// Durability is the caller's business, as with os: File.Sync makes a
// file's content durable, SyncDir makes the entries of a directory (the
// files created, renamed or removed in it) durable.
type FS interface {
	// OpenFile is os.OpenFile (os.O_* flags).
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	ReadFile(name string) ([]byte, error)
	// ReadDir returns the entries sorted by name, as os.ReadDir.
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	MkdirAll(path string, perm os.FileMode) error
	Rename(oldpath, newpath string) error
	Remove(name string) error
	RemoveAll(path string) error
	Chtimes(name string, atime, mtime time.Time) error
	// SyncDir fsyncs a directory, making its entries durable.
	SyncDir(dir string) error
	// Lock takes the exclusive lock of a log dir (<dir>/.lock), held until
	// the returned Closer is closed.
	Lock(dir string) (io.Closer, error)
}

// File is an open file. *os.File implements it, so the real file system
// costs an interface call per operation and nothing more.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
}

// OSFS is the operating system's file system.
type OSFS struct{}

var _ FS = OSFS{}

// OpenFile returns the *os.File itself: readers such as the broker's
// sendfile path may type-assert it.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}

func (OSFS) ReadFile(name string) ([]byte, error)         { return readFile(name) }
func (OSFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (OSFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (OSFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (OSFS) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(name, atime, mtime)
}

func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

func (OSFS) Lock(dir string) (io.Closer, error) {
	f, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// fsOrOS is fs, or the operating system's when nil.
func fsOrOS(fs FS) FS {
	if fs == nil {
		return OSFS{}
	}
	return fs
}
