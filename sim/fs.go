package sim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brook-mq/brook/log"
)

// FS is one broker's simulated disk: a log.FS held in memory, whose
// content survives a crash only as far as it was made durable.
//
// The durability rule, as POSIX states it and as the log code assumes:
//   - a file's content is durable up to its last File.Sync; the writes and
//     truncations after it are pending;
//   - a directory's entries (files and directories created, renamed or
//     removed in it) are durable as of its last SyncDir; the directory
//     itself is durable as an entry of its parent.
//
// Crash(true), a power failure, restores every directory's entries to
// their last SyncDir and every file reachable from the root through them
// to its synced content followed by a seeded random prefix of its pending
// writes, in order: half the time none at all, otherwise any number of
// them, and the first one not kept may be torn (a random prefix of its
// bytes written). Crash(false), a process crash, keeps everything: the
// operating system's page cache outlives the process. Either way every
// handle and Mount of before the crash fails from then on, so the dead
// incarnation cannot write after its death.
//
// Choices come from a source of their own seeded from the run's seed, so
// that the file system does not shift the choices of the rest of the run.
type FS struct {
	// mu guards everything: the log fsyncs a rolled segment on a
	// goroutine of its own.
	mu     sync.Mutex
	rand   *rand.Rand
	now    func() time.Time
	root   *fsNode
	mount  int // the live mount; older ones are dead
	locked map[string]bool
	// Stats for the trace: bytes lost and writes torn by the last power
	// failure.
	lostBytes, torn int
}

// fsNode is a file or a directory.
type fsNode struct {
	dir bool
	// A directory's entries as the running system sees them, and as of
	// its last SyncDir.
	entries, durable map[string]*fsNode
	// A file's content: data, then zeros up to size (a preallocated
	// index costs nothing); synced and syncedSize as of its last Sync;
	// pending the writes since.
	data       []byte
	size       int64
	synced     []byte
	syncedSize int64
	pending    []fsWrite
	mtime      time.Time
}

// fsWrite is a pending write at off, or a truncation to size.
type fsWrite struct {
	truncate bool
	off      int64
	data     []byte
	size     int64
}

// errDead is what a handle or mount of a crashed incarnation gets.
var errDead = errors.New("sim: file system of a crashed incarnation")

// NewFS returns an empty disk whose crashes draw from seed.
func NewFS(seed int64, now func() time.Time) *FS {
	return &FS{rand: rand.New(rand.NewSource(seed)), now: now, root: newDir(), locked: map[string]bool{}}
}

func newDir() *fsNode {
	return &fsNode{dir: true, entries: map[string]*fsNode{}, durable: map[string]*fsNode{}}
}

// Mount returns the file system as one incarnation of the broker sees it,
// valid until the next Crash.
func (f *FS) Mount() log.FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &fsMount{fs: f, id: f.mount}
}

// DrawPowerFailure draws whether the next crash is a power failure (half
// the time) or a process crash.
func (f *FS) DrawPowerFailure() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rand.Intn(2) == 0
}

// Crash ends the current mount. With power, unsynced state is lost as the
// type's comment describes.
func (f *FS) Crash(power bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mount++
	clear(f.locked)
	f.lostBytes, f.torn = 0, 0
	if power {
		before := f.root.bytes(map[*fsNode]bool{})
		f.restore(f.root, map[*fsNode]bool{})
		f.lostBytes = int(before - f.root.bytes(map[*fsNode]bool{}))
	}
}

// bytes sums the sizes of the files n reaches.
func (n *fsNode) bytes(seen map[*fsNode]bool) int64 {
	if seen[n] {
		return 0
	}
	seen[n] = true
	if !n.dir {
		return int64(len(n.data)) // a preallocated tail is no data
	}
	var sum int64
	for _, c := range n.entries {
		sum += c.bytes(seen)
	}
	return sum
}

// LastCrash reports what the last power failure lost: the bytes the files
// shrank by (files gone with their unsynced directory entries included)
// and the writes torn.
func (f *FS) LastCrash() (lostBytes, torn int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lostBytes, f.torn
}

// restore brings n and what it reaches back to their durable state,
// visiting names in order so that the random draws follow the seed.
func (f *FS) restore(n *fsNode, seen map[*fsNode]bool) {
	if seen[n] {
		return // reachable twice: a rename durable in one directory only
	}
	seen[n] = true
	if !n.dir {
		f.restoreFile(n)
		return
	}
	n.entries = make(map[string]*fsNode, len(n.durable))
	for k, v := range n.durable {
		n.entries[k] = v
	}
	for _, name := range sortedNames(n.entries) {
		f.restore(n.entries[name], seen)
	}
}

func (f *FS) restoreFile(n *fsNode) {
	keep := 0
	if len(n.pending) > 0 && f.rand.Intn(2) == 0 {
		keep = f.rand.Intn(len(n.pending) + 1)
	}
	pending := n.pending
	n.data, n.size = slices.Clone(n.synced), n.syncedSize
	n.pending = nil
	for _, w := range pending[:keep] {
		n.apply(w)
	}
	for _, w := range pending[keep:] {
		if !w.truncate && len(w.data) > 1 && f.rand.Intn(2) == 0 {
			cut := 1 + f.rand.Intn(len(w.data)-1)
			n.apply(fsWrite{off: w.off, data: w.data[:cut]})
			f.torn++
		}
		break
	}
	n.sync()
}

func (n *fsNode) apply(w fsWrite) {
	if w.truncate {
		if w.size < int64(len(n.data)) {
			n.data = n.data[:w.size]
		}
		n.size = w.size
		return
	}
	end := w.off + int64(len(w.data))
	if end > int64(len(n.data)) {
		if w.off > int64(len(n.data)) {
			n.data = append(n.data, make([]byte, w.off-int64(len(n.data)))...)
		}
		n.data = append(n.data[:w.off], w.data...)
	} else {
		copy(n.data[w.off:], w.data)
	}
	n.size = max(n.size, end)
}

func (n *fsNode) sync() {
	n.synced, n.syncedSize, n.pending = slices.Clone(n.data), n.size, nil
}

// read copies the content at off into p, zeros past data.
func (n *fsNode) read(p []byte, off int64) int {
	if off >= n.size {
		return 0
	}
	k := int(min(int64(len(p)), n.size-off))
	c := 0
	if off < int64(len(n.data)) {
		c = copy(p[:k], n.data[off:])
	}
	clear(p[c:k])
	return k
}

func sortedNames(m map[string]*fsNode) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// fsMount is one incarnation's view; every call fails after a crash.
type fsMount struct {
	fs *FS
	id int
}

var _ log.FS = (*fsMount)(nil)

// lock takes the file system's lock for a call of this mount.
func (m *fsMount) lock() (unlock func(), err error) {
	m.fs.mu.Lock()
	if m.id != m.fs.mount {
		m.fs.mu.Unlock()
		return nil, errDead
	}
	return m.fs.mu.Unlock, nil
}

func splitPath(name string) []string {
	var out []string
	for _, p := range strings.Split(filepath.ToSlash(filepath.Clean(name)), "/") {
		if p != "" && p != "." {
			out = append(out, p)
		}
	}
	return out
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// lookup returns the node at name.
func (m *fsMount) lookup(op, name string) (*fsNode, error) {
	n := m.fs.root
	for _, p := range splitPath(name) {
		if !n.dir {
			return nil, pathErr(op, name, errors.New("not a directory"))
		}
		c, ok := n.entries[p]
		if !ok {
			return nil, pathErr(op, name, fs.ErrNotExist)
		}
		n = c
	}
	return n, nil
}

// parent returns the directory holding name and name's last element.
func (m *fsMount) parent(op, name string) (*fsNode, string, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", pathErr(op, name, fs.ErrInvalid)
	}
	d, err := m.lookup(op, strings.Join(parts[:len(parts)-1], "/"))
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", pathErr(op, name, errors.New("not a directory"))
	}
	return d, parts[len(parts)-1], nil
}

func (m *fsMount) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	d, base, err := m.parent("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.entries[base]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case ok && n.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0:
		return nil, pathErr("open", name, errors.New("is a directory"))
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case !ok:
		n = &fsNode{mtime: m.fs.now()}
		d.entries[base] = n
	}
	if flag&os.O_TRUNC != 0 && !n.dir {
		n.write(fsWrite{truncate: true}, m.fs.now())
	}
	return &fsFile{m: m, n: n, name: name, writable: flag&(os.O_WRONLY|os.O_RDWR) != 0}, nil
}

// write applies w and keeps it pending until the next Sync.
func (n *fsNode) write(w fsWrite, now time.Time) {
	if !w.truncate {
		w.data = slices.Clone(w.data)
	}
	n.apply(w)
	n.pending = append(n.pending, w)
	n.mtime = now
}

// node runs fn on the node at name, under the lock of a live mount.
func (m *fsMount) node(op, name string, fn func(*fsNode) error) error {
	unlock, err := m.lock()
	if err != nil {
		return err
	}
	defer unlock()
	n, err := m.lookup(op, name)
	if err != nil {
		return err
	}
	return fn(n)
}

func (m *fsMount) ReadFile(name string) (data []byte, err error) {
	err = m.node("open", name, func(n *fsNode) error {
		if n.dir {
			return pathErr("read", name, errors.New("is a directory"))
		}
		data = make([]byte, n.size)
		n.read(data, 0)
		return nil
	})
	return data, err
}

func (m *fsMount) ReadDir(name string) (out []os.DirEntry, err error) {
	err = m.node("open", name, func(n *fsNode) error {
		if !n.dir {
			return pathErr("readdirent", name, errors.New("not a directory"))
		}
		for _, k := range sortedNames(n.entries) {
			out = append(out, fs.FileInfoToDirEntry(n.entries[k].info(k)))
		}
		return nil
	})
	return out, err
}

func (m *fsMount) Stat(name string) (fi os.FileInfo, err error) {
	err = m.node("stat", name, func(n *fsNode) error {
		fi = n.info(filepath.Base(name))
		return nil
	})
	return fi, err
}

func (m *fsMount) MkdirAll(path string, perm os.FileMode) error {
	unlock, err := m.lock()
	if err != nil {
		return err
	}
	defer unlock()
	n := m.fs.root
	for _, p := range splitPath(path) {
		c, ok := n.entries[p]
		if !ok {
			c = newDir()
			c.mtime = m.fs.now()
			n.entries[p] = c
		} else if !c.dir {
			return pathErr("mkdir", path, errors.New("not a directory"))
		}
		n = c
	}
	return nil
}

func (m *fsMount) Rename(oldpath, newpath string) error {
	unlock, err := m.lock()
	if err != nil {
		return err
	}
	defer unlock()
	od, ob, err := m.parent("rename", oldpath)
	if err != nil {
		return err
	}
	n, ok := od.entries[ob]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	nd, nb, err := m.parent("rename", newpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	if t, ok := nd.entries[nb]; ok && t != n && t.dir && len(t.entries) > 0 {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errors.New("directory not empty")}
	}
	delete(od.entries, ob)
	nd.entries[nb] = n
	return nil
}

func (m *fsMount) Remove(name string) error {
	unlock, err := m.lock()
	if err != nil {
		return err
	}
	defer unlock()
	d, base, err := m.parent("remove", name)
	if err != nil {
		return err
	}
	n, ok := d.entries[base]
	if !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir && len(n.entries) > 0 {
		return pathErr("remove", name, errors.New("directory not empty"))
	}
	delete(d.entries, base)
	return nil
}

func (m *fsMount) RemoveAll(path string) error {
	unlock, err := m.lock()
	if err != nil {
		return err
	}
	defer unlock()
	d, base, err := m.parent("unlinkat", path)
	if err != nil {
		return nil // nothing there, as os.RemoveAll
	}
	delete(d.entries, base)
	return nil
}

func (m *fsMount) Chtimes(name string, atime, mtime time.Time) error {
	return m.node("chtimes", name, func(n *fsNode) error {
		n.mtime = mtime
		return nil
	})
}

func (m *fsMount) SyncDir(dir string) error {
	return m.node("open", dir, func(n *fsNode) error {
		if !n.dir {
			return pathErr("sync", dir, errors.New("not a directory"))
		}
		n.durable = make(map[string]*fsNode, len(n.entries))
		for k, v := range n.entries {
			n.durable[k] = v
		}
		return nil
	})
}

// Lock holds dir's lock for this mount, as flock does for a process: a
// crash releases it.
func (m *fsMount) Lock(dir string) (io.Closer, error) {
	unlock, err := m.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	key := filepath.Clean(dir)
	if n, err := m.lookup("open", dir); err != nil || !n.dir {
		return nil, fmt.Errorf("lock log dir %s: %w", dir, pathErr("open", dir, fs.ErrNotExist))
	}
	if m.fs.locked[key] {
		return nil, fmt.Errorf("%w: log dir %s", log.ErrDirLocked, dir)
	}
	m.fs.locked[key] = true
	return fsLock{m: m, key: key}, nil
}

type fsLock struct {
	m   *fsMount
	key string
}

func (l fsLock) Close() error {
	unlock, err := l.m.lock()
	if err != nil {
		return nil // the crash released it
	}
	defer unlock()
	delete(l.m.fs.locked, l.key)
	return nil
}

// fsFile is an open file of a mount.
type fsFile struct {
	m        *fsMount
	n        *fsNode
	name     string
	off      int64 // for Write
	writable bool
	closed   bool
}

var _ log.File = (*fsFile)(nil)

// lock is the mount's lock, failing on a closed handle too.
func (f *fsFile) lock(op string) (func(), error) {
	unlock, err := f.m.lock()
	if err != nil {
		return nil, err
	}
	if f.closed {
		unlock()
		return nil, pathErr(op, f.name, os.ErrClosed)
	}
	return unlock, nil
}

func (f *fsFile) ReadAt(p []byte, off int64) (int, error) {
	unlock, err := f.lock("read")
	if err != nil {
		return 0, err
	}
	defer unlock()
	if f.n.dir {
		return 0, pathErr("read", f.name, errors.New("is a directory"))
	}
	k := f.n.read(p, off)
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *fsFile) WriteAt(p []byte, off int64) (int, error) {
	unlock, err := f.lock("write")
	if err != nil {
		return 0, err
	}
	defer unlock()
	if !f.writable {
		return 0, pathErr("write", f.name, errors.New("bad file descriptor"))
	}
	f.n.write(fsWrite{off: off, data: p}, f.m.fs.now())
	return len(p), nil
}

func (f *fsFile) Write(p []byte) (int, error) {
	n, err := f.WriteAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *fsFile) Truncate(size int64) error {
	unlock, err := f.lock("truncate")
	if err != nil {
		return err
	}
	defer unlock()
	if !f.writable {
		return pathErr("truncate", f.name, errors.New("invalid argument"))
	}
	f.n.write(fsWrite{truncate: true, size: size}, f.m.fs.now())
	return nil
}

func (f *fsFile) Sync() error {
	unlock, err := f.lock("sync")
	if err != nil {
		return err
	}
	defer unlock()
	if !f.n.dir {
		f.n.sync()
	}
	return nil
}

func (f *fsFile) Stat() (os.FileInfo, error) {
	unlock, err := f.lock("stat")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return f.n.info(filepath.Base(f.name)), nil
}

func (f *fsFile) Close() error {
	unlock, err := f.lock("close")
	if err != nil {
		if errors.Is(err, errDead) {
			return nil // the crash closed it
		}
		return err
	}
	defer unlock()
	f.closed = true
	return nil
}

// info is the node's FileInfo under name.
func (n *fsNode) info(name string) os.FileInfo {
	mode := os.FileMode(0o644)
	if n.dir {
		mode = os.ModeDir | 0o755
	}
	return fsInfo{name: name, size: n.size, mode: mode, mtime: n.mtime}
}

type fsInfo struct {
	name  string
	size  int64
	mode  os.FileMode
	mtime time.Time
}

func (i fsInfo) Name() string       { return i.name }
func (i fsInfo) Size() int64        { return i.size }
func (i fsInfo) Mode() os.FileMode  { return i.mode }
func (i fsInfo) ModTime() time.Time { return i.mtime }
func (i fsInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fsInfo) Sys() any           { return nil }
