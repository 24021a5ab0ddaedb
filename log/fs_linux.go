//go:build linux

package log

import (
	"io/fs"
	"os"
	"syscall"
)

// openFile is os.OpenFile for regular files, without the poller: os
// offers every file it opens to epoll, which refuses regular files after
// an epoll_ctl and two fcntls. A broker loading 50,000 logs at start opens
// one file per log and reads two small ones; os's extra system calls were
// a third of those opens and reads.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := openNoEINTR(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// readFile is os.ReadFile without a *os.File: the checkpoint and metadata
// files a log reads at load are a few hundred bytes.
func readFile(name string) ([]byte, error) {
	fd, err := openNoEINTR(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func openNoEINTR(name string, flag int, perm os.FileMode) (int, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}
