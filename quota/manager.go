package quota

import (
	"sync"
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
	key      string
	window   Window
	now      func() time.Time
	maxRates int

	mu    sync.Mutex
	table Table
	rates map[Key]*entry
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
	return &Manager{key: key, window: cfg.Window.normal(), now: cfg.Now, maxRates: cfg.MaxRates, rates: map[Key]*entry{}}
}

// SetTable replaces the quotas. Rates already measured are kept, as Kafka
// keeps its sensors when a quota changes and only their bound moves.
func (m *Manager) SetTable(t Table) {
	m.mu.Lock()
	m.table = t
	m.mu.Unlock()
}

// Enabled reports whether any entity sets this manager's key, so that a
// broker without quotas skips recording.
func (m *Manager) Enabled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.table {
		if _, ok := q[m.key]; ok {
			return true
		}
	}
	return false
}

// Record adds value (bytes) used by a client of user with clientID and
// returns how long the client is throttled: zero within its quota, else
// Kafka's (observed-quota)/quota*window. As Kafka since 2.0 the usage is
// recorded whether or not the client is then over its quota.
func (m *Manager) Record(user, clientID string, value float64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit, key, ok := m.table.Resolve(m.key, user, clientID)
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
	return ThrottleTime(observed, limit, e.rate.WindowMs(ms))
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
