package quota

import (
	"math"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

func TestResolvePrecedence(t *testing.T) {
	u, c := Named("alice"), Named("app")
	// Entities from the most to the least specific, with the rate key each
	// one gives alice's client "app".
	order := []struct {
		entity Entity
		rate   Key
	}{
		{Entity{User: u, Client: c}, Key{"alice", "app"}},
		{Entity{User: u, Client: DefaultName}, Key{"alice", "app"}},
		{Entity{User: u}, Key{User: "alice"}},
		{Entity{User: DefaultName, Client: c}, Key{"alice", "app"}},
		{Entity{User: DefaultName, Client: DefaultName}, Key{"alice", "app"}},
		{Entity{User: DefaultName}, Key{User: "alice"}},
		{Entity{Client: c}, Key{Client: "app"}},
		{Entity{Client: DefaultName}, Key{Client: "app"}},
	}
	// With entities i.. set (each to a distinct limit), entity i wins.
	for i := range order {
		table := Table{}
		for j := i; j < len(order); j++ {
			table[order[j].entity] = map[string]float64{ProducerByteRate: float64(100 + j)}
		}
		// Other keys and other principals never match.
		table[Entity{User: Named("bob")}] = map[string]float64{ProducerByteRate: 1}
		table[Entity{User: u, Client: c}] = mergeKey(table[Entity{User: u, Client: c}], ConsumerByteRate, 7)
		limit, rate, ok := table.Resolve(ProducerByteRate, "alice", "app")
		if !ok || limit != float64(100+i) || rate != order[i].rate {
			t.Errorf("entities %d..: got %v %+v %v, want %v %+v", i, limit, rate, ok, 100+i, order[i].rate)
		}
	}
	if _, _, ok := (Table{Entity{User: Named("bob")}: {ProducerByteRate: 1}}).Resolve(ProducerByteRate, "alice", "app"); ok {
		t.Error("bob's quota applied to alice")
	}
	// A user named "<default>" is not the default user.
	if _, _, ok := (Table{Entity{User: DefaultName}: {ProducerByteRate: 1}}).Resolve(ProducerByteRate, "", ""); !ok {
		t.Error("default user quota not applied to the empty user")
	}
	if _, _, ok := (Table{Entity{User: Named("<default>")}: {ProducerByteRate: 1}}).Resolve(ProducerByteRate, "carol", "x"); ok {
		t.Error("a user named <default> applied as the default")
	}
}

func mergeKey(m map[string]float64, k string, v float64) map[string]float64 {
	if m == nil {
		m = map[string]float64{}
	}
	m[k] = v
	return m
}

func TestRate(t *testing.T) {
	w := Window{Num: 11, Size: time.Second}
	for _, tc := range []struct {
		name   string
		events [][2]int64 // ms, value
		at     int64
		want   float64
		window int64
	}{
		// A first burst counts against Num-1 windows.
		{"burst", [][2]int64{{0, 1000}}, 0, 100, 10000},
		{"burst later in window", [][2]int64{{0, 1000}}, 500, 1000 / 10.5, 10500},
		// Past Num-1 windows the span is the real one.
		{"span", [][2]int64{{0, 1000}, {10500, 1000}}, 10500, 2000 / 10.5, 10500},
		// Samples Num windows old are dropped.
		{"expired", [][2]int64{{0, 1000}, {10500, 1000}}, 11000, 100, 10000},
		// Windows stay aligned across an idle gap: the event at 3700
		// opens the sample of [3000, 4000), so the one at 4100 opens
		// another, and by 14000 only that one is live.
		{"aligned", [][2]int64{{0, 100}, {3700, 200}, {4100, 400}}, 14000, 40, 10000},
		// Ten full samples and the one just begun.
		{"steady", steady(0, 30000, 100, 100), 30000, 1010, 10000},
	} {
		r := NewRate(w)
		for _, e := range tc.events {
			r.Record(float64(e[1]), e[0])
		}
		got, win := r.Measure(tc.at), r.WindowMs(tc.at)
		if math.Abs(got-tc.want) > 1e-9*tc.want || win != tc.window {
			t.Errorf("%s: rate %v over %d ms, want %v over %d ms", tc.name, got, win, tc.want, tc.window)
		}
	}
}

// steady records value every step ms in [from, to].
func steady(from, to, step, value int64) [][2]int64 {
	var out [][2]int64
	for ms := from; ms <= to; ms += step {
		out = append(out, [2]int64{ms, value})
	}
	return out
}

func TestThrottleTime(t *testing.T) {
	for _, tc := range []struct {
		observed, quota float64
		window          int64
		want            time.Duration
	}{
		{100, 50, 2000, 2000 * time.Millisecond},
		{18.2, 18.2, 10000, 0},
		{16.5, 20.4, 10000, 0},
		{2000, 1000, 10000, 10 * time.Second},
		{1000.1, 1000, 10000, time.Millisecond},
		{1000.01, 1000, 10000, 0}, // 0.1 ms rounds down
		{5, 0, 10000, 0},
	} {
		if got := ThrottleTime(tc.observed, tc.quota, tc.window); got != tc.want {
			t.Errorf("ThrottleTime(%v, %v, %d) = %v, want %v", tc.observed, tc.quota, tc.window, got, tc.want)
		}
	}
}

func TestManagerThrottle(t *testing.T) {
	clock := testutil.NewClock(time.UnixMilli(1_000_000))
	m := NewManager(ProducerByteRate, Config{Now: clock.Now})
	if d := m.Record("alice", "app", 1<<30); d != 0 || m.Enabled() {
		t.Fatalf("no quotas: throttled %v, enabled %v", d, m.Enabled())
	}
	m.SetTable(Table{
		Entity{User: Named("alice")}:   {ProducerByteRate: 1000},
		Entity{User: DefaultName}:      {ProducerByteRate: 5000},
		Entity{Client: Named("other")}: {ConsumerByteRate: 1},
	})
	if !m.Enabled() {
		t.Fatal("not enabled with a producer quota")
	}
	// 20000 bytes at once: 2000 B/s over 10 s, so 10 s of throttle.
	if d := m.Record("alice", "app", 20000); d != 10*time.Second {
		t.Fatalf("alice throttled %v, want 10s", d)
	}
	// Alice's other client shares her user quota.
	if d := m.Record("alice", "app2", 1); d == 0 {
		t.Error("alice's second client not throttled")
	}
	// Bob and carol each have their own default-user rate.
	if d := m.Record("bob", "app", 40000); d != 0 {
		t.Errorf("bob throttled %v within his 5000 B/s", d)
	}
	if d := m.Record("carol", "app", 40000); d != 0 {
		t.Errorf("carol throttled %v: bob's usage counted against her", d)
	}
	// A client with no producer quota is never throttled.
	m.SetTable(Table{Entity{User: Named("alice")}: {ProducerByteRate: 1000}})
	if d := m.Record("dave", "app", 1<<40); d != 0 {
		t.Errorf("unlimited client throttled %v", d)
	}
}

// A client that waits out each throttle is held near its quota, and one
// without a quota on the same manager is not slowed. The first Num-1
// windows let a burst of that many windows' worth through (Kafka's Rate
// counts a young rate over Num-1 windows), so the rate is taken over the
// 30 s after the first full quota window.
func TestManagerHoldsRate(t *testing.T) {
	for _, tc := range []struct {
		quota float64
		chunk float64
		w     Window
	}{
		{1 << 20, 64 << 10, DefaultWindow},
		{2 << 20, 256 << 10, DefaultWindow},
		{1 << 20, 16 << 10, Window{Num: 3, Size: 500 * time.Millisecond}},
	} {
		clock := testutil.NewClock(time.UnixMilli(5_000_000))
		m := NewManager(ConsumerByteRate, Config{Now: clock.Now, Window: tc.w})
		m.SetTable(Table{Entity{Client: Named("limited")}: {ConsumerByteRate: tc.quota}})
		warm := clock.Now().Add(time.Duration(tc.w.Num) * tc.w.Size)
		var start time.Time
		var sent float64
		for start.IsZero() || clock.Now().Sub(start) < 30*time.Second {
			if start.IsZero() && !clock.Now().Before(warm) {
				start = clock.Now()
			}
			if !start.IsZero() {
				sent += tc.chunk
			}
			if d := m.Record("", "limited", tc.chunk); d > 0 {
				clock.Advance(d)
			} else {
				clock.Advance(time.Millisecond)
			}
			if d := m.Record("", "free", tc.chunk); d != 0 {
				t.Fatalf("unlimited client throttled %v", d)
			}
		}
		rate := sent / clock.Now().Sub(start).Seconds()
		if rate < 0.9*tc.quota || rate > 1.1*tc.quota {
			t.Errorf("quota %v chunk %v window %+v: held at %.0f B/s, want within 10%%", tc.quota, tc.chunk, tc.w, rate)
		}
	}
}

func TestManagerBoundsRates(t *testing.T) {
	clock := testutil.NewClock(time.UnixMilli(0))
	m := NewManager(ProducerByteRate, Config{Now: clock.Now, MaxRates: 2})
	m.SetTable(Table{Entity{Client: DefaultName}: {ProducerByteRate: 1000}})
	for _, c := range []string{"a", "b", "c"} {
		m.Record("", c, 1)
		clock.Advance(time.Second)
	}
	if n := m.Rates(); n != 2 {
		t.Errorf("%d rates kept, want the bound 2", n)
	}
	clock.Advance(InactiveExpiry)
	m.Record("", "d", 1)
	if n := m.Rates(); n != 1 {
		t.Errorf("%d rates kept after an idle hour, want 1", n)
	}
}
