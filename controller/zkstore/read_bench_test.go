package zkstore

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/internal/parallel"
	"github.com/brook-mq/brook/internal/testutil"
)

var readNodes = flag.Int("read-nodes", 20000, "znodes BenchmarkParallelGets reads")

// BenchmarkParallelGets reads -read-nodes znodes of 130 bytes (a partition
// state's size) through one session with n reads in flight, as a new
// controller loads every partition state: how far ZooKeeper's pipelining
// of one session goes.
func BenchmarkParallelGets(b *testing.B) {
	zk := testutil.StartZooKeeper(b)
	ctx := context.Background()
	s, err := Dial(ctx, Options{Connect: zk.Connect() + "/bench", SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, "/s", nil, 0); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 130)
	const batch = 1000
	for i := 0; i < *readNodes; i += batch {
		var ops []store.Op
		for j := i; j < min(i+batch, *readNodes); j++ {
			ops = append(ops, store.CreateOp{Path: fmt.Sprintf("/s/%d", j), Data: data})
		}
		if err := s.Multi(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{32, 128, 512, 2048} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				parallel.ForEach(*readNodes, n, func(i int) {
					if _, _, err := s.Get(ctx, fmt.Sprintf("/s/%d", i)); err != nil {
						b.Error(err)
					}
				})
			}
			b.ReportMetric(float64(*readNodes*b.N)/b.Elapsed().Seconds(), "reads/s")
		})
	}
}
