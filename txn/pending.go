package txn

import "github.com/brook-mq/brook/internal/pending"

// Pending is a request whose step ran and whose answer comes once its
// record is committed or failed (internal/pending); Wait answers
// REQUEST_TIMED_OUT when its context ends first.
type Pending[T any] = pending.Pending[T]
