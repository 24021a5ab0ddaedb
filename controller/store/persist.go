package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FileName is the file in the data directory holding the persistent nodes.
const FileName = "brook-metadata.json"

// fileFormat is the on-disk form: JSON, because metadata is small and an
// operator can read it. Ephemeral nodes are never written. zxid is kept so
// that creation zxids (broker epochs) keep growing across restarts.
//
//	{"version":1,"zxid":42,"nodes":[{"path":"/brokers","data":"<base64>","stat":{...}}, ...]}
type fileFormat struct {
	Version int        `json:"version"`
	Zxid    int64      `json:"zxid"`
	Nodes   []fileNode `json:"nodes"`
}

type fileNode struct {
	Path string `json:"path"`
	Data []byte `json:"data,omitempty"`
	Stat Stat   `json:"stat"`
	Seq  int32  `json:"seq,omitempty"` // next sequential child number
}

func metadataFile(dir string) string { return filepath.Join(dir, FileName) }

// save writes the persistent nodes to file atomically: a temp file is
// written and fsynced, renamed over the old one, and the directory fsynced,
// so a crash leaves either the old or the new tree, never a torn one.
func save(file string, t *tree) error {
	// Built by hand from each node's cached entry, so that a change costs
	// encoding the nodes it touched, not the whole tree. Node order is
	// arbitrary; load sorts.
	buf := fmt.Appendf(make([]byte, 0, t.lastSaveSize+4096), `{"version":1,"zxid":%d,"nodes":[`, t.zxid)
	first := true
	for p, n := range t.nodes {
		if p == "/" || n.stat.EphemeralOwner != 0 {
			continue
		}
		if n.enc == nil {
			enc, err := json.Marshal(fileNode{Path: p, Data: n.data, Stat: n.stat, Seq: n.seq})
			if err != nil {
				return fmt.Errorf("encode metadata node %s: %w", p, err)
			}
			n.enc = enc
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, n.enc...)
	}
	buf = append(buf, "]}"...)
	t.lastSaveSize = len(buf)
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("save metadata: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("save metadata %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("save metadata %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save metadata %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("save metadata: %w", err)
	}
	d, err := os.Open(filepath.Dir(file))
	if err != nil {
		return fmt.Errorf("save metadata: sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("save metadata: sync dir: %w", err)
	}
	return nil
}

// load reads a saved tree; it returns nil, nil when there is no file yet.
func load(file string) (*tree, error) {
	buf, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load metadata: %w", err)
	}
	var ff fileFormat
	if err := json.Unmarshal(buf, &ff); err != nil {
		return nil, fmt.Errorf("load metadata %s: %w", file, err)
	}
	if ff.Version != 1 {
		return nil, fmt.Errorf("load metadata %s: unknown version %d", file, ff.Version)
	}
	t := newTree()
	t.zxid = ff.Zxid
	// Sorted paths put every parent before its children.
	sort.Slice(ff.Nodes, func(i, j int) bool { return ff.Nodes[i].Path < ff.Nodes[j].Path })
	for _, fn := range ff.Nodes {
		if err := ValidatePath(fn.Path); err != nil || fn.Path == "/" {
			return nil, fmt.Errorf("load metadata %s: bad node path %q", file, fn.Path)
		}
		parent, ok := t.nodes[Parent(fn.Path)]
		if !ok {
			return nil, fmt.Errorf("load metadata %s: node %s has no parent", file, fn.Path)
		}
		st := fn.Stat
		st.EphemeralOwner = 0
		t.nodes[fn.Path] = &node{data: fn.Data, stat: st, seq: fn.Seq, children: map[string]struct{}{}}
		parent.children[fn.Path[strings.LastIndexByte(fn.Path, '/')+1:]] = struct{}{}
	}
	return t, nil
}
