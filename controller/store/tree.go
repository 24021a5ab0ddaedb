package store

import (
	"fmt"
	"sort"
	"strings"
)

// node is one znode. children holds child names (not paths).
type node struct {
	data     []byte
	stat     Stat
	children map[string]struct{}
	// seq numbers sequential children. It counts child creations only:
	// ZooKeeper bumps the child version on deletes too, but its sequence
	// numbers advance only on creates (observed on ZooKeeper 3.9).
	seq int32
	// enc caches the node's entry in the metadata file; nil when the node
	// changed since. Saving re-encodes only changed nodes.
	enc []byte
}

func (n *node) clone() *node {
	c := &node{data: n.data, stat: n.stat, seq: n.seq, enc: n.enc, children: make(map[string]struct{}, len(n.children))}
	for k := range n.children {
		c.children[k] = struct{}{}
	}
	return c
}

// trigger is a watch to fire once the change that caused it is committed.
type trigger struct {
	path string
	typ  EventType
}

// tree is the znode tree. It is not safe for concurrent use; DB locks it.
// Every mutation records the prior state of each node it touches in undo,
// so that a failed Multi can be rolled back exactly, and appends the watches
// it fires to triggers, which the caller delivers only after commit.
type tree struct {
	nodes map[string]*node
	zxid  int64

	// Transaction bookkeeping, reset by begin.
	undo         map[string]*node // prior node, nil if it did not exist
	undoZxid     int64
	triggers     []trigger
	persistDirty bool // a persistent node changed: the file must be rewritten
	lastSaveSize int  // size of the last saved file, to size the next buffer
}

func newTree() *tree {
	t := &tree{nodes: map[string]*node{"/": {children: map[string]struct{}{}}}}
	return t
}

func (t *tree) begin() {
	t.undo = map[string]*node{}
	t.undoZxid = t.zxid
	t.triggers = t.triggers[:0]
	t.persistDirty = false
}

func (t *tree) rollback() {
	for path, prior := range t.undo {
		if prior == nil {
			delete(t.nodes, path)
		} else {
			t.nodes[path] = prior
		}
	}
	t.zxid = t.undoZxid
	t.triggers = t.triggers[:0]
	t.persistDirty = false
}

// remember saves the state of path before its first change in a transaction.
func (t *tree) remember(path string) {
	if _, ok := t.undo[path]; ok {
		return
	}
	if n, ok := t.nodes[path]; ok {
		t.undo[path] = n.clone()
	} else {
		t.undo[path] = nil
	}
}

func (t *tree) get(path string) (*node, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	n, ok := t.nodes[path]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoNode, path)
	}
	return n, nil
}

func (t *tree) stat(n *node) Stat {
	s := n.stat
	s.DataLength = int32(len(n.data))
	s.NumChildren = int32(len(n.children))
	return s
}

func (t *tree) sortedChildren(n *node) []string {
	out := make([]string, 0, len(n.children))
	for k := range n.children {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (t *tree) create(path string, data []byte, flags CreateFlags, session int64, nowMs int64) (string, error) {
	if err := ValidatePath(path); err != nil {
		return "", err
	}
	if path == "/" {
		return "", fmt.Errorf("%w: /", ErrNodeExists)
	}
	parentPath := Parent(path)
	parent, ok := t.nodes[parentPath]
	if !ok {
		return "", fmt.Errorf("%w: parent of %s", ErrNoNode, path)
	}
	if parent.stat.EphemeralOwner != 0 {
		return "", fmt.Errorf("%w: %s", ErrNoChildrenForEphemerals, parentPath)
	}
	if flags&Sequential != 0 {
		path = fmt.Sprintf("%s%010d", path, parent.seq)
	}
	if _, exists := t.nodes[path]; exists {
		return "", fmt.Errorf("%w: %s", ErrNodeExists, path)
	}
	t.remember(path)
	t.remember(parentPath)
	t.zxid++
	n := &node{
		data:     append([]byte(nil), data...),
		children: map[string]struct{}{},
		stat:     Stat{Czxid: t.zxid, Mzxid: t.zxid, Pzxid: t.zxid, Ctime: nowMs, Mtime: nowMs},
	}
	if flags&Ephemeral != 0 {
		n.stat.EphemeralOwner = session
	}
	// The parent's child version changes even for an ephemeral child, and
	// sequential names depend on it, so the file is rewritten either way.
	t.persistDirty = true
	t.nodes[path] = n
	parent.children[path[strings.LastIndexByte(path, '/')+1:]] = struct{}{}
	parent.stat.Cversion++
	parent.seq++
	parent.stat.Pzxid = t.zxid
	parent.enc = nil
	t.triggers = append(t.triggers, trigger{path, EventNodeCreated}, trigger{parentPath, EventNodeChildrenChanged})
	return path, nil
}

func (t *tree) set(path string, data []byte, version int32, nowMs int64) (Stat, error) {
	n, err := t.get(path)
	if err != nil {
		return Stat{}, err
	}
	if version != AnyVersion && version != n.stat.Version {
		return Stat{}, fmt.Errorf("%w: %s at version %d, expected %d", ErrBadVersion, path, n.stat.Version, version)
	}
	t.remember(path)
	t.zxid++
	n.data = append([]byte(nil), data...)
	n.enc = nil
	n.stat.Version++
	n.stat.Mzxid = t.zxid
	n.stat.Mtime = nowMs
	if n.stat.EphemeralOwner == 0 {
		t.persistDirty = true
	}
	t.triggers = append(t.triggers, trigger{path, EventNodeDataChanged})
	return t.stat(n), nil
}

func (t *tree) delete(path string, version int32) error {
	if path == "/" {
		return fmt.Errorf("%w: cannot delete /", ErrInvalidPath)
	}
	n, err := t.get(path)
	if err != nil {
		return err
	}
	if version != AnyVersion && version != n.stat.Version {
		return fmt.Errorf("%w: %s at version %d, expected %d", ErrBadVersion, path, n.stat.Version, version)
	}
	if len(n.children) > 0 {
		return fmt.Errorf("%w: %s", ErrNotEmpty, path)
	}
	parentPath := Parent(path)
	parent := t.nodes[parentPath]
	t.remember(path)
	t.remember(parentPath)
	t.zxid++
	delete(t.nodes, path)
	delete(parent.children, path[strings.LastIndexByte(path, '/')+1:])
	parent.stat.Cversion++
	parent.stat.Pzxid = t.zxid
	parent.enc = nil
	t.persistDirty = true
	t.triggers = append(t.triggers, trigger{path, EventNodeDeleted}, trigger{parentPath, EventNodeChildrenChanged})
	return nil
}

func (t *tree) check(path string, version int32) error {
	n, err := t.get(path)
	if err != nil {
		return err
	}
	if version != AnyVersion && version != n.stat.Version {
		return fmt.Errorf("%w: %s at version %d, expected %d", ErrBadVersion, path, n.stat.Version, version)
	}
	return nil
}

// ephemeralsOf lists the ephemeral nodes owned by session, deepest first.
func (t *tree) ephemeralsOf(session int64) []string {
	var out []string
	for p, n := range t.nodes {
		if n.stat.EphemeralOwner == session {
			out = append(out, p)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}
