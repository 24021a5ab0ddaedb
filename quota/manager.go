package quota

import (
	"sync"
	"sync/atomic"
	"time"
)

// InactiveExpiry is how long a rate nobody records into is kept, as
// Kafka's sensors expire after an hour without use.
const InactiveExpiry = time.Hour

// DefaultMaxRates bounds the rates a Manager keeps, since client ids are
// the clients' choice; past it the least recently used is dropped.
const DefaultMaxRates = 100_000

// Manager is one of Kafka's ClientQuotaManagers: it records a quota key's
// usage (bytes produced, bytes fetched) per rate Key and tells how long a
// client over its quota is throttled.
type Manager struct {
	key         string
	window      Window
	now         func() time.Time
	maxRates    int
	maxThrottle time.Duration
	// enabled caches whether the table sets key, so that a request path
	// with no quota of this kind pays one atomic load.
	enabled atomic.Bool

	mu    sync.Mutex
	table Table
	rates map[Key]*entry
	// resolved caches table.Resolve by (user, client id): one map
	// lookup on every request instead of up to eight. Emptied with each
	// table, and when it reaches maxRates.
	resolved map[Key]resolution
}

type resolution struct {
	limit float64
	rate  Key
	ok    bool
}

type entry struct {
	rate *Rate
	// bucket is controller_mutation_rate's measure (MutationManager).
	bucket TokenBucket
	last   time.Time
}

// Config configures a Manager; zero values take Kafka's window, time.Now
// and DefaultMaxRates.
type Config struct {
	Window   Window
	Now      func() time.Time
	MaxRates int
	// MaxThrottle, when positive, bounds the throttle time, as Kafka's
	// ClientRequestQuotaManager bounds request_percentage throttles to
	// one quota window (QuotaUtils.boundedThrottleTime).
	MaxThrottle time.Duration
}

// NewManager returns a Manager of quota key (producer_byte_rate, ...) that
// limits nobody until SetTable.
func NewManager(key string, cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxRates < 1 {
		cfg.MaxRates = DefaultMaxRates
	}
	return &Manager{key: key, window: cfg.Window.normal(), now: cfg.Now, maxRates: cfg.MaxRates, maxThrottle: cfg.MaxThrottle, rates: map[Key]*entry{}, resolved: map[Key]resolution{}}
}

// SetTable replaces the quotas. Rates already measured are kept, as Kafka
// keeps its sensors when a quota changes and only their bound moves.
func (m *Manager) SetTable(t Table) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.table = t
	clear(m.resolved)
	enabled := false
	for _, q := range t {
		if _, ok := q[m.key]; ok {
			enabled = true
			break
		}
	}
	m.enabled.Store(enabled)
}

// Table is the quotas in force (every key, not only this manager's); the
// caller must not change it.
func (m *Manager) Table() Table {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.table
}

// Enabled reports whether any entity sets this manager's key, so that a
// broker without quotas skips recording.
func (m *Manager) Enabled() bool { return m.enabled.Load() }

// Record adds value (bytes) used by a client of user with clientID and
// returns how long the client is throttled: zero within its quota, else
// Kafka's (observed-quota)/quota*window. As Kafka since 2.0 the usage is
// recorded whether or not the client is then over its quota.
func (m *Manager) Record(user, clientID string, value float64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit, key, ok := m.resolveLocked(user, clientID)
	if !ok {
		return 0
	}
	now := m.now()
	e := m.entryLocked(key, now)
	e.last = now
	ms := now.UnixMilli()
	e.rate.Record(value, ms)
	observed := e.rate.Measure(ms)
	if observed <= limit {
		return 0
	}
	d := ThrottleTime(observed, limit, e.rate.WindowMs(ms))
	if m.maxThrottle > 0 {
		d = min(d, m.maxThrottle)
	}
	return d
}

// RecordNoThrottle adds value to the client's rate without checking its
// quota, as Kafka's recordNoThrottle; a negative value takes back what
// Record added, as Kafka's unrecordQuotaSensor does for a fetch answered
// empty because it was throttled.
func (m *Manager) RecordNoThrottle(user, clientID string, value float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, key, ok := m.resolveLocked(user, clientID)
	if !ok {
		return
	}
	now := m.now()
	e := m.entryLocked(key, now)
	e.last = now
	e.rate.Record(value, now.UnixMilli())
}

// MaxValueInWindow is the most a client may use in one measurement, its
// quota times Num-1 windows (Kafka's getMaxValueInQuotaWindow): a fetch
// asks for no more than this, or a consumer whose quota is below one
// answer would be throttled on every fetch (KAFKA-9677). ok is false for
// a client without a quota.
func (m *Manager) MaxValueInWindow(user, clientID string) (max float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit, _, ok := m.resolveLocked(user, clientID)
	if !ok {
		return 0, false
	}
	return limit * float64(m.window.Num-1) * m.window.Size.Seconds(), true
}

func (m *Manager) resolveLocked(user, clientID string) (float64, Key, bool) {
	id := Key{User: user, Client: clientID}
	if r, ok := m.resolved[id]; ok {
		return r.limit, r.rate, r.ok
	}
	if len(m.resolved) >= m.maxRates {
		clear(m.resolved)
	}
	limit, rate, ok := m.table.Resolve(m.key, user, clientID)
	m.resolved[id] = resolution{limit: limit, rate: rate, ok: ok}
	return limit, rate, ok
}

// Rates is how many rates are kept.
func (m *Manager) Rates() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.rates)
}

func (m *Manager) entryLocked(id Key, now time.Time) *entry {
	if e, ok := m.rates[id]; ok {
		return e
	}
	makeRoom(m.rates, func(e *entry) time.Time { return e.last }, now, m.maxRates)
	e := &entry{rate: NewRate(m.window), last: now}
	m.rates[id] = e
	return e
}

// makeRoom is the moment before a new rate is added to rates: it drops
// the rates idle for InactiveExpiry, as Kafka's sensors expire, and the
// least recently used if still at maxRates.
func makeRoom[K comparable, V any](rates map[K]V, last func(V) time.Time, now time.Time, maxRates int) {
	var lru K
	var lruAt time.Time
	for k, e := range rates {
		at := last(e)
		if now.Sub(at) >= InactiveExpiry {
			delete(rates, k)
			continue
		}
		if lruAt.IsZero() || at.Before(lruAt) {
			lru, lruAt = k, at
		}
	}
	if len(rates) >= maxRates {
		delete(rates, lru)
	}
}
