// Package store defines the metadata store Brook's controller runs on: a tree
// of znodes with ZooKeeper's semantics (versions, ephemeral and sequential
// nodes, one-shot watches, multi-op transactions), so that the same controller
// code runs over the embedded store of a single node and over a real
// ZooKeeper ensemble.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, matching ZooKeeper's error codes one for one so that a
// ZooKeeper-backed implementation can map onto them.
var (
	ErrNoNode                  = errors.New("store: node does not exist")
	ErrNodeExists              = errors.New("store: node already exists")
	ErrBadVersion              = errors.New("store: version conflict")
	ErrNotEmpty                = errors.New("store: node has children")
	ErrSessionExpired          = errors.New("store: session expired")
	ErrNoChildrenForEphemerals = errors.New("store: ephemeral nodes may not have children")
	ErrInvalidPath             = errors.New("store: invalid path")
)

// AnyVersion matches every version in Set, Delete and CheckOp, as -1 does in ZooKeeper.
const AnyVersion int32 = -1

// CreateFlags selects the kind of node Create makes.
type CreateFlags int32

const (
	// Ephemeral nodes vanish when the session that created them ends.
	Ephemeral CreateFlags = 1 << iota
	// Sequential nodes get a 10-digit, zero-padded counter appended to their
	// name, taken from the parent's child version as ZooKeeper does.
	Sequential
)

// Stat mirrors ZooKeeper's Stat. Czxid of a broker's registration node is the
// broker epoch that the controller puts in its requests.
type Stat struct {
	Czxid          int64 // zxid of the change that created the node
	Mzxid          int64 // zxid of the last data change
	Pzxid          int64 // zxid of the last child list change
	Ctime          int64 // milliseconds since the epoch
	Mtime          int64
	Version        int32 // data version
	Cversion       int32 // child version
	EphemeralOwner int64 // session id of the owner; 0 if persistent
	DataLength     int32
	NumChildren    int32
}

// EventType names what made a watch fire.
type EventType int

const (
	EventNodeCreated EventType = iota + 1
	EventNodeDeleted
	EventNodeDataChanged
	EventNodeChildrenChanged
	// EventNotWatching is delivered to outstanding watches when the session
	// ends; Err says why (ErrSessionExpired).
	EventNotWatching
)

func (t EventType) String() string {
	switch t {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventNotWatching:
		return "NotWatching"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is delivered once on a watch channel; the channel is then never used again.
type Event struct {
	Type EventType
	Path string
	Err  error
}

// Store is a ZooKeeper-like session on a metadata tree. Paths are absolute
// ("/brokers/ids/1"); a parent must exist before a child is created.
type Store interface {
	// Create makes a node and returns its actual path (which differs from
	// path for Sequential nodes).
	Create(ctx context.Context, path string, data []byte, flags CreateFlags) (string, error)
	Get(ctx context.Context, path string) ([]byte, Stat, error)
	// GetW is Get plus a one-shot watch for NodeDataChanged or NodeDeleted.
	GetW(ctx context.Context, path string) ([]byte, Stat, <-chan Event, error)
	Exists(ctx context.Context, path string) (bool, Stat, error)
	// ExistsW watches for NodeCreated when the node is absent, and for
	// NodeDataChanged or NodeDeleted when it exists.
	ExistsW(ctx context.Context, path string) (bool, Stat, <-chan Event, error)
	// Children returns child names sorted.
	Children(ctx context.Context, path string) ([]string, Stat, error)
	// ChildrenW watches for NodeChildrenChanged or NodeDeleted.
	ChildrenW(ctx context.Context, path string) ([]string, Stat, <-chan Event, error)
	// Set replaces the data if version matches (AnyVersion matches all).
	Set(ctx context.Context, path string, data []byte, version int32) (Stat, error)
	Delete(ctx context.Context, path string, version int32) error
	// Multi applies all ops or none.
	Multi(ctx context.Context, ops ...Op) error
	SessionID() int64
	// Close ends the session: its ephemeral nodes are deleted and its
	// outstanding watches receive EventNotWatching.
	Close() error
}

// Op is one operation of a Multi transaction.
type Op interface{ opPath() string }

// CheckOp fails the transaction unless the node's version matches.
type CheckOp struct {
	Path    string
	Version int32
}

// CreateOp creates a node as Create does.
type CreateOp struct {
	Path  string
	Data  []byte
	Flags CreateFlags
}

// SetOp sets data as Set does.
type SetOp struct {
	Path    string
	Data    []byte
	Version int32
}

// DeleteOp deletes a node as Delete does.
type DeleteOp struct {
	Path    string
	Version int32
}

func (o CheckOp) opPath() string  { return o.Path }
func (o CreateOp) opPath() string { return o.Path }
func (o SetOp) opPath() string    { return o.Path }
func (o DeleteOp) opPath() string { return o.Path }

// ValidatePath checks a path the way ZooKeeper's PathUtils does, less the
// unicode rules: absolute, no empty, "." or ".." components, no trailing slash.
func ValidatePath(path string) error {
	if path == "/" {
		return nil
	}
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
		return fmt.Errorf("%w: %q", ErrInvalidPath, path)
	}
	for _, part := range strings.Split(path[1:], "/") {
		if part == "" || part == "." || part == ".." || strings.ContainsRune(part, 0) {
			return fmt.Errorf("%w: %q", ErrInvalidPath, path)
		}
	}
	return nil
}

// Parent returns the parent of a valid path ("/" for top-level nodes).
func Parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// EnsurePath creates path and any missing ancestors as empty persistent
// nodes. Nodes that already exist are left alone, so concurrent callers do
// not conflict.
func EnsurePath(ctx context.Context, s Store, path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	if path == "/" {
		return nil
	}
	if ok, _, err := s.Exists(ctx, path); err != nil {
		return fmt.Errorf("ensure path %s: %w", path, err)
	} else if ok {
		return nil
	}
	if err := EnsurePath(ctx, s, Parent(path)); err != nil {
		return err
	}
	if _, err := s.Create(ctx, path, nil, 0); err != nil && !errors.Is(err, ErrNodeExists) {
		return fmt.Errorf("ensure path %s: %w", path, err)
	}
	return nil
}

// CreateRecursive creates path with data, first creating missing ancestors
// as empty persistent nodes. It fails with ErrNodeExists if path exists.
func CreateRecursive(ctx context.Context, s Store, path string, data []byte, flags CreateFlags) (string, error) {
	created, err := s.Create(ctx, path, data, flags)
	if !errors.Is(err, ErrNoNode) {
		return created, err
	}
	if err := EnsurePath(ctx, s, Parent(path)); err != nil {
		return "", err
	}
	return s.Create(ctx, path, data, flags)
}
