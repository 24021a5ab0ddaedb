//go:build unix

package log

import "syscall"

// DefaultMaxOpenFiles is a quarter of the process's descriptor limit
// (RLIMIT_NOFILE; Go raises the soft limit to the hard one at start), so
// that sockets, checkpoints and the files of a cleaning keep the rest: 5,000
// under a limit of 20,000.
func DefaultMaxOpenFiles() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 256
	}
	return int(max(min(rl.Cur/4, 1<<20), 16))
}
