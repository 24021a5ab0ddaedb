package log

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"sync"
	"syscall"
)

// FileCache bounds the descriptors that the segment files of a broker's
// logs hold. A segment's .log is a cachedFile: its descriptor is opened on
// first use and closed again when the cache is over its limit and the file
// is the least recently used one not in use, so a broker with 50,000 idle
// partitions holds at most max descriptors for them, not one each. Kafka
// has nothing like it: it keeps every segment's .log open and mmaps its
// indexes, so it needs a descriptor (and map areas) per segment file and
// fails with "Too many open files" once partitions times segments pass
// the ulimit.
//
// A use (a read, write, truncate or fsync) pins the descriptor: the cache
// never closes one in use, so a sendfile of a Slice cannot see its file
// closed under it, and the count may pass max while more than max files
// are in use at once. Closing an idle descriptor loses nothing: written
// pages belong to the file, not the descriptor, and an fsync through a
// later descriptor makes them durable (as the simulation's FS models too).
//
// mu guards every cachedFile's state; I/O runs outside it.
type FileCache struct {
	max int

	mu   sync.Mutex
	open int // descriptors held, pinned or not
	// head is the most recently used open file, tail the least; pinned
	// files stay on the list and are skipped by eviction.
	head, tail *cachedFile
	// opens and evictions count descriptors opened again after an
	// eviction, and closed by eviction (tests and metrics).
	reopens, evictions int64
}

// NewFileCache returns a cache holding at most maxOpen idle descriptors
// (at least 1).
func NewFileCache(maxOpen int) *FileCache {
	return &FileCache{max: max(maxOpen, 1)}
}

// Open is the number of descriptors the cache holds now.
func (c *FileCache) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// Stats returns how many descriptors were reopened after an eviction and
// how many were closed by eviction.
func (c *FileCache) Stats() (reopens, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reopens, c.evictions
}

// cachedFile is a File whose descriptor the cache may close while it is
// idle and reopens on the next use. Its name follows renames made through
// rename and renameDir, so a reopen finds the file where it is now.
type cachedFile struct {
	c    *FileCache
	fs   FS
	name string
	// The fields below are guarded by c.mu.
	f    File // nil while closed by the cache
	refs int  // uses in progress: f stays open while positive
	// dirty: written since the last Sync. A Sync of a file whose
	// descriptor was evicted reopens it only then.
	dirty      bool
	closed     bool
	prev, next *cachedFile
	listed     bool
}

// osCachedFile is a cachedFile over the operating system's files: it also
// lends its descriptor to sendfile (syscall.Conn).
type osCachedFile struct{ *cachedFile }

// openCached opens name with flag (which may create it) and puts the
// descriptor in the cache.
func (c *FileCache) openCached(fsys FS, name string, flag int) (File, error) {
	f, err := fsys.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	cf := &cachedFile{c: c, fs: fsys, name: name}
	c.mu.Lock()
	cf.f = f
	c.open++
	c.pushFront(cf)
	victims := c.evictLocked()
	c.mu.Unlock()
	closeAll(victims)
	if _, ok := f.(syscall.Conn); ok {
		return osCachedFile{cf}, nil
	}
	return cf, nil
}

// asCached returns the cachedFile behind f, or nil if f is not cached.
func asCached(f File) *cachedFile {
	switch f := f.(type) {
	case *cachedFile:
		return f
	case osCachedFile:
		return f.cachedFile
	}
	return nil
}

// acquire pins the descriptor, reopening it if the cache closed it.
func (cf *cachedFile) acquire() (File, error) {
	c := cf.c
	c.mu.Lock()
	for {
		if cf.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("%s: %w", cf.name, os.ErrClosed)
		}
		if cf.f != nil {
			cf.refs++
			c.moveToFront(cf)
			f := cf.f
			c.mu.Unlock()
			return f, nil
		}
		name := cf.name
		c.mu.Unlock()
		f, err := cf.fs.OpenFile(name, os.O_RDWR, 0)
		c.mu.Lock()
		if err != nil {
			if cf.name != name {
				continue // renamed meanwhile: try the new name
			}
			c.mu.Unlock()
			return nil, fmt.Errorf("reopen: %w", err)
		}
		if cf.closed || cf.f != nil {
			// Closed, or reopened by another use, meanwhile.
			f.Close()
			continue
		}
		cf.f = f
		cf.refs++
		c.open++
		c.reopens++
		c.pushFront(cf)
		victims := c.evictLocked()
		c.mu.Unlock()
		closeAll(victims)
		return f, nil
	}
}

// release unpins after a use; wrote marks the file dirty. The last
// release of a closed file closes its descriptor.
func (cf *cachedFile) release(wrote bool) error {
	c := cf.c
	c.mu.Lock()
	cf.refs--
	if wrote {
		cf.dirty = true
	}
	if cf.refs == 0 && cf.closed && cf.f != nil {
		f := cf.f
		cf.f = nil
		c.open--
		c.unlink(cf)
		c.mu.Unlock()
		return f.Close()
	}
	victims := c.evictLocked()
	c.mu.Unlock()
	closeAll(victims)
	return nil
}

// evictLocked takes the descriptors of the least recently used idle files
// until the cache is within max; the caller closes them outside mu.
func (c *FileCache) evictLocked() []File {
	var victims []File
	for cf := c.tail; cf != nil && c.open > c.max; {
		prev := cf.prev
		if cf.refs == 0 {
			victims = append(victims, cf.f)
			cf.f = nil
			c.open--
			c.evictions++
			c.unlink(cf)
		}
		cf = prev
	}
	return victims
}

// closeAll closes evicted descriptors. An error of close(2) on a local
// file system reports nothing about the data (writeback errors reach the
// next fsync, through any descriptor), so it is dropped.
func closeAll(fs []File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

func (c *FileCache) pushFront(cf *cachedFile) {
	cf.prev, cf.next, cf.listed = nil, c.head, true
	if c.head != nil {
		c.head.prev = cf
	}
	c.head = cf
	if c.tail == nil {
		c.tail = cf
	}
}

func (c *FileCache) unlink(cf *cachedFile) {
	if !cf.listed {
		return
	}
	if cf.prev != nil {
		cf.prev.next = cf.next
	} else {
		c.head = cf.next
	}
	if cf.next != nil {
		cf.next.prev = cf.prev
	} else {
		c.tail = cf.prev
	}
	cf.prev, cf.next, cf.listed = nil, nil, false
}

func (c *FileCache) moveToFront(cf *cachedFile) {
	if c.head == cf {
		return
	}
	c.unlink(cf)
	c.pushFront(cf)
}

func (cf *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := cf.acquire()
	if err != nil {
		return 0, err
	}
	n, err := f.ReadAt(p, off)
	return n, errors.Join(err, cf.release(false))
}

func (cf *cachedFile) WriteAt(p []byte, off int64) (int, error) {
	f, err := cf.acquire()
	if err != nil {
		return 0, err
	}
	n, err := f.WriteAt(p, off)
	return n, errors.Join(err, cf.release(true))
}

// Write is not supported: the file offset would not survive a reopen.
// Segment files are written at explicit positions only.
func (cf *cachedFile) Write([]byte) (int, error) {
	return 0, fmt.Errorf("log: %s: Write on a cached file (use WriteAt)", cf.name)
}

func (cf *cachedFile) Truncate(size int64) error {
	f, err := cf.acquire()
	if err != nil {
		return err
	}
	return errors.Join(f.Truncate(size), cf.release(true))
}

// Stat uses the descriptor if it is open and the name otherwise, so that
// asking a segment's size or modification time opens nothing.
func (cf *cachedFile) Stat() (os.FileInfo, error) {
	c := cf.c
	for {
		c.mu.Lock()
		if cf.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("%s: %w", cf.name, os.ErrClosed)
		}
		if cf.f != nil {
			// Pinned under the lock it was seen open under, as acquire
			// pins it: released first, it could be evicted and reopened.
			cf.refs++
			c.moveToFront(cf)
			f := cf.f
			c.mu.Unlock()
			st, err := f.Stat()
			return st, errors.Join(err, cf.release(false))
		}
		name := cf.name
		c.mu.Unlock()
		st, err := cf.fs.Stat(name)
		if err != nil && errors.Is(err, iofs.ErrNotExist) && cf.renamedFrom(name) {
			continue
		}
		return st, err
	}
}

// renamedFrom reports whether the file was renamed away from name.
func (cf *cachedFile) renamedFrom(name string) bool {
	cf.c.mu.Lock()
	defer cf.c.mu.Unlock()
	return cf.name != name
}

// Sync fsyncs what was written through any descriptor of the file. A file
// whose descriptor was evicted is reopened only if it was written since
// the last Sync.
func (cf *cachedFile) Sync() error {
	c := cf.c
	c.mu.Lock()
	if cf.closed {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", cf.name, os.ErrClosed)
	}
	if cf.f == nil && !cf.dirty {
		c.mu.Unlock()
		return nil
	}
	// Cleared before the fsync: a write that ends after this point marks
	// the file dirty again (release), one that ended before is covered.
	cf.dirty = false
	c.mu.Unlock()
	f, err := cf.acquire()
	if err != nil {
		cf.markDirty()
		return err
	}
	if err := f.Sync(); err != nil {
		cf.markDirty()
		return errors.Join(err, cf.release(false))
	}
	return cf.release(false)
}

func (cf *cachedFile) markDirty() {
	cf.c.mu.Lock()
	cf.dirty = true
	cf.c.mu.Unlock()
}

// Close releases the descriptor now, or after the uses in progress end.
// Later uses fail with os.ErrClosed.
func (cf *cachedFile) Close() error {
	c := cf.c
	c.mu.Lock()
	if cf.closed {
		c.mu.Unlock()
		return nil
	}
	cf.closed = true
	if cf.refs > 0 || cf.f == nil {
		c.mu.Unlock()
		return nil
	}
	f := cf.f
	cf.f = nil
	c.open--
	c.unlink(cf)
	c.mu.Unlock()
	return f.Close()
}

// rename moves the file to name. It runs under the cache's lock so that a
// reopen never looks for the file under a name it no longer has.
func (cf *cachedFile) rename(name string) error {
	cf.c.mu.Lock()
	defer cf.c.mu.Unlock()
	if err := cf.fs.Rename(cf.name, name); err != nil {
		return err
	}
	cf.name = name
	return nil
}

// renameDir renames the directory from to to and moves the names of files
// (which are in it) along, under the cache's lock for the same reason.
func (c *FileCache) renameDir(fsys FS, from, to string, files []*cachedFile) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := fsys.Rename(from, to); err != nil {
		return err
	}
	for _, cf := range files {
		if rest, ok := cutDirPrefix(cf.name, from); ok {
			cf.name = to + rest
		}
	}
	return nil
}

// cutDirPrefix returns what follows dir in name when name is inside dir.
func cutDirPrefix(name, dir string) (string, bool) {
	if len(name) <= len(dir) || name[:len(dir)] != dir || name[len(dir)] != os.PathSeparator {
		return "", false
	}
	return name[len(dir):], true
}

// SyscallConn lends the descriptor to sendfile: Control pins it (reopening
// it if needed) for as long as fn runs.
func (f osCachedFile) SyscallConn() (syscall.RawConn, error) {
	return cachedRawConn{f.cachedFile}, nil
}

type cachedRawConn struct{ cf *cachedFile }

func (r cachedRawConn) Control(fn func(fd uintptr)) error {
	f, err := r.cf.acquire()
	if err != nil {
		return err
	}
	sc, ok := f.(syscall.Conn)
	if !ok {
		return errors.Join(fmt.Errorf("log: %s has no descriptor", r.cf.name), r.cf.release(false))
	}
	raw, err := sc.SyscallConn()
	if err == nil {
		err = raw.Control(fn)
	}
	return errors.Join(err, r.cf.release(false))
}

func (r cachedRawConn) Read(func(fd uintptr) bool) error {
	return errors.New("log: cached file: raw Read not supported")
}

func (r cachedRawConn) Write(func(fd uintptr) bool) error {
	return errors.New("log: cached file: raw Write not supported")
}
