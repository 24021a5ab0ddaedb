//go:build !linux

package log

import "os"

func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
