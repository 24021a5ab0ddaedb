package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary metadata files to load: it must not panic, must
// reject what is inconsistent (a node without its parent), and whatever
// loads must save and load again to the same tree.
func FuzzLoad(f *testing.F) {
	t := newTree()
	t.begin()
	_, _ = t.create("/a", []byte("x"), 0, 0, 1)
	_, _ = t.create("/a/b", nil, Sequential, 0, 1)
	dir := f.TempDir()
	if err := save(filepath.Join(dir, FileName), t); err != nil {
		f.Fatal(err)
	}
	valid, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][]byte{nil, {}, []byte("{}"), []byte(`{"version":1}`), valid, append(valid, "garbage"...),
		[]byte(`{"version":1,"nodes":[{"path":"/x/y","stat":{}}]}`), []byte(`{"version":1,"nodes":[{"path":"/","stat":{}}]}`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		file := filepath.Join(dir, FileName)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := load(file)
		if err != nil || tr == nil {
			return
		}
		for p := range tr.nodes {
			if p == "/" {
				continue
			}
			if _, ok := tr.nodes[Parent(p)]; !ok {
				t.Fatalf("loaded %s without its parent", p)
			}
		}
		if err := save(file, tr); err != nil {
			t.Fatal(err)
		}
		again, err := load(file)
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		if len(again.nodes) != len(tr.nodes) || again.zxid != tr.zxid {
			t.Fatalf("reload changed the tree: %d nodes -> %d", len(tr.nodes), len(again.nodes))
		}
		for p, n := range tr.nodes {
			m := again.nodes[p]
			if m == nil || !bytes.Equal(m.data, n.data) || m.seq != n.seq || len(m.children) != len(n.children) {
				t.Fatalf("node %s changed on reload", p)
			}
		}
	})
}
