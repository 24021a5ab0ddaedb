package quota

import (
	"errors"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// A quota of 2 partitions/s over Kafka's 11 windows of 1 s bursts 22.
func TestMutationQuota(t *testing.T) {
	type step struct {
		advance  time.Duration
		strict   bool
		permits  float64
		refused  bool
		throttle time.Duration
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"strict: the exceeding mutation passes, the next is refused", []step{
			{0, true, 30, false, 0},
			// -8 tokens: 4 s to refill to zero.
			{0, true, 1, true, 4 * time.Second},
			{time.Second, true, 1, true, 3 * time.Second},
			// Back to zero tokens: allowed again.
			{3 * time.Second, true, 1, false, 0},
		}},
		{"strict within the burst", []step{
			{0, true, 22, false, 0},
			{0, true, 1, false, 0},
			{0, true, 1, true, 500 * time.Millisecond},
		}},
		{"permissive: never refused, throttled once exceeded", []step{
			{0, false, 20, false, 0},
			{0, false, 4, false, time.Second},
			{0, false, 4, false, 3 * time.Second},
		}},
		{"the bucket refills up to the burst only", []step{
			{time.Hour, true, 23, false, 0},
			{0, false, 0, false, 500 * time.Millisecond},
		}},
	} {
		clock := testutil.NewClock(time.UnixMilli(1_000_000))
		mm := NewMutationManager(Config{Now: clock.Now})
		mm.SetTable(Table{
			Entity{User: Named("alice")}: {ControllerMutationRate: 2},
			Entity{User: Named("bob")}:   {ProducerByteRate: 1},
		})
		for i, s := range tc.steps {
			clock.Advance(s.advance)
			q := mm.Quota("alice", "app", s.strict)
			err := q.Record(s.permits)
			if errors.Is(err, ErrThrottled) != s.refused || q.ThrottleTime() != s.throttle {
				t.Errorf("%s: step %d: err %v throttle %v, want refused %v throttle %v", tc.name, i, err, q.ThrottleTime(), s.refused, s.throttle)
			}
		}
		// Bob has no mutation quota: never limited.
		q := mm.Quota("bob", "app", true)
		for range 3 {
			if err := q.Record(1000); err != nil || q.ThrottleTime() != 0 {
				t.Errorf("%s: unlimited client: %v %v", tc.name, err, q.ThrottleTime())
			}
		}
	}
	// Without any controller_mutation_rate the quota is unbounded.
	mm := NewMutationManager(Config{})
	mm.SetTable(Table{Entity{User: Named("alice")}: {ProducerByteRate: 1}})
	if q := mm.Quota("alice", "", true); q.Record(1e9) != nil || q.Record(1) != nil || q.ThrottleTime() != 0 {
		t.Error("unbounded quota refused or throttled")
	}
}

// The throttle told is what is left of it when the answer goes out.
func TestMutationThrottleElapses(t *testing.T) {
	clock := testutil.NewClock(time.UnixMilli(10_000))
	mm := NewMutationManager(Config{Now: clock.Now, Window: Window{Num: 2, Size: time.Second}})
	mm.SetTable(Table{Entity{Client: DefaultName}: {ControllerMutationRate: 1}})
	q := mm.Quota("", "c", false)
	q.Record(4) // 2 - 4 = -2: 2 s
	clock.Advance(1500 * time.Millisecond)
	if got := q.ThrottleTime(); got != 500*time.Millisecond {
		t.Errorf("throttle after 1.5 s: %v, want 500ms", got)
	}
	clock.Advance(time.Second)
	if got := q.ThrottleTime(); got != 0 {
		t.Errorf("throttle after 2.5 s: %v, want 0", got)
	}
}
