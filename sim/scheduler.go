package sim

import (
	"container/heap"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// simStart is the virtual time every run starts at.
var simStart = time.Unix(1_700_000_000, 0)

// defaultTraceLen bounds the trace kept for a failure report.
const defaultTraceLen = 40

// Scheduler runs events in virtual time, one at a time. Every choice the
// simulation makes comes from Rand, so a seed replays exactly.
type Scheduler struct {
	Rand  *rand.Rand
	Clock *testutil.Clock

	queue eventQueue
	seq   uint64
	steps int
	trace []string // ring of the last TraceLen events
	next  int
	// TraceLen is how many trace lines are kept (default 40).
	TraceLen int
}

type event struct {
	at   time.Time
	seq  uint64
	name string
	fn   func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// NewScheduler returns a scheduler whose every choice follows seed.
func NewScheduler(seed int64) *Scheduler {
	return &Scheduler{Rand: rand.New(rand.NewSource(seed)), Clock: testutil.NewClock(simStart), TraceLen: defaultTraceLen}
}

// Now is the virtual time.
func (s *Scheduler) Now() time.Time { return s.Clock.Now() }

// After schedules fn to run d from now (d < 0 counts as 0). A name
// starting with ~ marks a routine event, left out of the trace.
func (s *Scheduler) After(d time.Duration, name string, fn func()) {
	s.seq++
	heap.Push(&s.queue, &event{at: s.Now().Add(max(d, 0)), seq: s.seq, name: name, fn: fn})
}

// Step runs the next event, moving the clock to its time; false when none is left.
func (s *Scheduler) Step() bool {
	if s.queue.Len() == 0 {
		return false
	}
	e := heap.Pop(&s.queue).(*event)
	if d := e.at.Sub(s.Now()); d > 0 {
		s.Clock.Advance(d)
	}
	s.steps++
	if !strings.HasPrefix(e.name, "~") { // routine events stay out of the trace
		s.Tracef("%s", e.name)
	}
	e.fn()
	return true
}

// Steps is the number of events run.
func (s *Scheduler) Steps() int { return s.steps }

// Tracef records a line of the trace, stamped with the virtual time.
func (s *Scheduler) Tracef(format string, args ...any) {
	line := fmt.Sprintf("%8.3fs %s", s.Now().Sub(simStart).Seconds(), fmt.Sprintf(format, args...))
	if len(s.trace) < s.TraceLen {
		s.trace = append(s.trace, line)
		return
	}
	s.trace[s.next] = line
	s.next = (s.next + 1) % s.TraceLen
}

// Trace returns the last events, oldest first.
func (s *Scheduler) Trace() string {
	lines := append(append([]string{}, s.trace[s.next:]...), s.trace[:s.next]...)
	return strings.Join(lines, "\n")
}

// Chance reports true with probability p.
func (s *Scheduler) Chance(p float64) bool { return s.Rand.Float64() < p }

// Between returns a duration uniformly in [lo, hi].
func (s *Scheduler) Between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.Rand.Int63n(int64(hi-lo)+1))
}
