package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// indexFile is the file behind a segment's .index or .timeindex, opened
// only once it is first written. The entries live in memory, so an idle
// partition needs no descriptor for its indexes: sizing (preallocate,
// trim, reset) goes through the path. Brook would otherwise hold three
// descriptors per partition, and 10,000 idle partitions would need 30,000
// of them (Kafka holds one: its indexes are mmaps whose descriptors it
// closes).
//
// Renaming the file (changeSuffix) must go through rename, so that a later
// open finds it. mu guards f: a background flush syncs a segment while a
// deletion closes its indexes.
//
// A recovery that rebuilt the index in memory discards the file's content
// lazily (discard): the file is cut and resized only when next written,
// synced or read. A broker restarting after kill -9 with 50,000 idle
// partitions otherwise opened, cut and resized both index files of every
// active segment at load, four opens each, a third of the load. The stale
// content is harmless meanwhile: a later start trusts an index file only
// once it was synced (a flush below the recovery point, or a clean
// shutdown), and after a crash the segment is scanned and discarded again.
type indexFile struct {
	fs   FS
	name string
	mu   sync.Mutex
	f    File // nil until the first write
	// stale says the content on disk is to be dropped: before anything
	// else uses the file it is cut to nothing and sized to staleSize.
	stale     bool
	staleSize int64
}

// discard marks the content on disk as stale (see indexFile).
func (x *indexFile) discard() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stale, x.staleSize = true, 0
}

// applyDiscard cuts and resizes a stale file, keeping its descriptor for
// the caller's use. The caller holds mu.
func (x *indexFile) applyDiscard() error {
	if !x.stale {
		return nil
	}
	f, err := x.handle()
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("discard %s: %w", x.name, err)
	}
	if err := f.Truncate(x.staleSize); err != nil {
		return fmt.Errorf("discard %s: %w", x.name, err)
	}
	x.stale = false
	return nil
}

// handle opens the file for writing if it is not open yet and keeps it.
// The caller holds mu.
func (x *indexFile) handle() (File, error) {
	if x.f != nil {
		return x.f, nil
	}
	f, err := x.fs.OpenFile(x.name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", x.name, err)
	}
	x.f = f
	return f, nil
}

func (x *indexFile) writeAt(b []byte, off int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.applyDiscard(); err != nil {
		return err
	}
	f, err := x.handle()
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, off)
	return err
}

// truncate sets the file's size, creating it if it does not exist; it
// keeps no descriptor open. On a stale file it only sets the size the
// discard will give it.
func (x *indexFile) truncate(size int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stale {
		x.staleSize = size
		return nil
	}
	if x.f != nil {
		return x.f.Truncate(size)
	}
	f, err := x.fs.OpenFile(x.name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	return errors.Join(f.Truncate(size), f.Close())
}

// size is the file's length; a missing file is empty.
func (x *indexFile) size() (int64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stale {
		return x.staleSize, nil
	}
	var st os.FileInfo
	var err error
	if x.f != nil {
		st, err = x.f.Stat()
	} else {
		st, err = x.fs.Stat(x.name)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// readAll returns the file's content. A missing file is created empty,
// as Kafka rebuilds a missing index: the segment keeps its three files.
func (x *indexFile) readAll() ([]byte, error) {
	x.mu.Lock()
	if err := x.applyDiscard(); err != nil {
		x.mu.Unlock()
		return nil, err
	}
	if x.f != nil {
		defer x.mu.Unlock()
		return readAll(x.f)
	}
	data, err := x.fs.ReadFile(x.name)
	x.mu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, x.truncate(0)
	}
	return data, err
}

// rename moves the file (open or not) to name.
func (x *indexFile) rename(name string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.fs.Rename(x.name, name); err != nil && !(x.f == nil && errors.Is(err, fs.ErrNotExist)) {
		return err
	}
	x.name = name
	return nil
}

// renamed records that the file was renamed to name by the caller.
func (x *indexFile) renamed(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.name = name
}

// sync fsyncs what was written; a file never opened has nothing to sync.
// A stale file is discarded first: a sync promises the content on disk.
func (x *indexFile) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.applyDiscard(); err != nil {
		return err
	}
	if x.f == nil {
		return nil
	}
	if err := x.f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// close releases the descriptor, if any; a later write opens it again. A
// stale file stays stale: a file is trusted only once synced, and a
// segment being deleted need not be discarded first.
func (x *indexFile) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
