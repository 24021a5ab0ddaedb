//go:build !unix

package log

// DefaultMaxOpenFiles is 1,024 where the descriptor limit is not known.
func DefaultMaxOpenFiles() int { return 1024 }
