package connect

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// sourceFile is the file a FileStreamSource connector reads and the lines
// a test wrote to it, safe to append to from a goroutine while the test
// reads Lines.
type sourceFile struct {
	t     *testing.T
	path  string
	mu    sync.Mutex
	lines []string
}

// Append writes n more numbered lines of varying length.
func (s *sourceFile) Append(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Error(err)
		return
	}
	defer f.Close()
	for range n {
		line := fmt.Sprintf("line %05d %s", len(s.lines), strings.Repeat("x", len(s.lines)%40))
		s.lines = append(s.lines, line)
		fmt.Fprintln(f, line)
	}
}

// Lines returns a copy of the lines written so far.
func (s *sourceFile) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}
