package controller

import (
	"context"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/internal/parallel"
)

// maxMultiBytes bounds the estimated size of one Multi of partition state
// writes. ZooKeeper refuses a request larger than jute.maxbuffer (1 MiB by
// default) and closes the session's connection: a new controller's writes
// for 50,000 partitions (every ISR loses the dead broker) came to about
// 7 MiB in one transaction. Kafka's controller writes each partition's
// state on its own (a multi of the epoch check and one set), pipelined.
const maxMultiBytes = 256 << 10

// multiParallelism bounds the chunks of plain state updates in flight at
// once: ZooKeeper pipelines a session's requests.
const multiParallelism = 4

// chunkOps splits a transaction whose first op is the controller epoch
// check into transactions of at most maxBytes (estimated), each starting
// with that check, in order.
func chunkOps(ops []store.Op, maxBytes int) [][]store.Op {
	if len(ops) == 0 {
		return nil
	}
	check, rest := ops[0], ops[1:]
	var chunks [][]store.Op
	cur, size := []store.Op{check}, opSize(check)
	for _, op := range rest {
		n := opSize(op)
		if len(cur) > 1 && size+n > maxBytes {
			chunks = append(chunks, cur)
			cur, size = []store.Op{check}, opSize(check)
		}
		cur = append(cur, op)
		size += n
	}
	return append(chunks, cur)
}

// opSize estimates an op's bytes in a ZooKeeper multi request: its path and
// data, and a header, version and flags.
func opSize(op store.Op) int {
	const header = 24
	switch o := op.(type) {
	case store.CreateOp:
		return header + len(o.Path) + len(o.Data) + 32 // and its ACL
	case store.SetOp:
		return header + len(o.Path) + len(o.Data)
	case store.CheckOp:
		return header + len(o.Path)
	case store.DeleteOp:
		return header + len(o.Path)
	}
	return header
}

// multiChunked applies ops (the epoch check first) as chunks of at most
// maxMultiBytes, each fenced by the check. The chunks are not one
// transaction: a failure leaves the earlier ones applied, and the caller
// reloads the state from the store (handle's error path), as after any
// failed write. Chunks that create znodes run in order (a partition's
// parents first); plain updates of existing states go up to workers at
// once (multiParallelism, or 1 for a stepped controller: readParallelism).
func multiChunked(ctx context.Context, st Store, ops []store.Op, workers int) error {
	chunks := chunkOps(ops, maxMultiBytes)
	if len(chunks) <= 1 {
		if len(chunks) == 0 {
			return nil
		}
		return st.Multi(ctx, chunks[0]...)
	}
	creates := false
	for _, op := range ops {
		if _, ok := op.(store.CreateOp); ok {
			creates = true
			break
		}
	}
	if creates {
		for _, ch := range chunks {
			if err := st.Multi(ctx, ch...); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(chunks))
	parallel.ForEach(len(chunks), workers, func(i int) {
		errs[i] = st.Multi(ctx, chunks[i]...)
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
