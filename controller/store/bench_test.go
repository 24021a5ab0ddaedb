package store_test

import (
	"context"
	"testing"

	. "github.com/brook-mq/brook/controller/store"
)

// BenchmarkSet measures one persistent write: with a directory, each write
// rewrites and fsyncs the metadata file (the tree holds ~200 nodes here, a
// cluster with a few topics).
func BenchmarkSet(b *testing.B) {
	for _, tc := range []struct {
		name string
		dir  string
	}{{"memory", ""}, {"disk", b.TempDir()}} {
		b.Run(tc.name, func(b *testing.B) {
			db, err := Open(Options{Dir: tc.dir})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := db.NewSession()
			ctx := context.Background()
			if err := EnsurePath(ctx, s, "/bench/nodes"); err != nil {
				b.Fatal(err)
			}
			for i := range 200 {
				if _, err := s.Create(ctx, "/bench/nodes/n_", []byte(`{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}`), Sequential); err != nil {
					b.Fatal(i, err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if _, err := s.Set(ctx, "/bench/nodes/n_0000000000", []byte("x"), AnyVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
