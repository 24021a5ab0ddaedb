package quota

import (
	"errors"
	"time"
)

// ErrThrottled is a strict mutation quota refusing a mutation: the
// topic's answer is THROTTLING_QUOTA_EXCEEDED.
var ErrThrottled = errors.New("The throttling quota has been exceeded.")

// MutationManager is Kafka's ControllerMutationQuotaManager: it counts
// the partitions a client creates, adds and deletes against its
// controller_mutation_rate, in a TokenBucket per rate Key.
type MutationManager struct {
	m *Manager
}

// NewMutationManager returns a manager that limits nobody until SetTable;
// cfg.Window is controller.quota.window.num and
// controller.quota.window.size.seconds.
func NewMutationManager(cfg Config) *MutationManager {
	return &MutationManager{m: NewManager(ControllerMutationRate, cfg)}
}

// SetTable replaces the quotas; the buckets are kept.
func (mm *MutationManager) SetTable(t Table) { mm.m.SetTable(t) }

// Quota is one request's mutation quota for a client of user with
// clientID, as Kafka's newQuotaFor: strict for the versions that may
// answer THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+, CreatePartitions
// v3+, DeleteTopics v5+), permissive for older ones, which are only told
// to back off. With no controller_mutation_rate set anywhere it is
// unbounded.
func (mm *MutationManager) Quota(user, clientID string, strict bool) *MutationQuota {
	if !mm.m.Enabled() {
		return &MutationQuota{}
	}
	return &MutationQuota{mm: mm, user: user, clientID: clientID, strict: strict}
}

// MutationQuota is Kafka's ControllerMutationQuota: it lives for one
// request and remembers the throttle its mutations earned.
type MutationQuota struct {
	mm             *MutationManager // nil: unbounded
	user, clientID string
	strict         bool
	throttleMs     int64
	recordedAt     time.Time
}

// Record counts permits (partitions) mutated. A strict quota already
// exceeded refuses them with ErrThrottled, recording nothing; one not yet
// exceeded takes them even if they exceed it, so that a request is never
// refused for its own size, and only the next one is. A permissive quota
// always takes them and throttles once exceeded.
func (q *MutationQuota) Record(permits float64) error {
	if q.mm == nil {
		return nil
	}
	m := q.mm.m
	m.mu.Lock()
	defer m.mu.Unlock()
	limit, key, ok := m.resolveLocked(q.user, q.clientID)
	if !ok {
		return nil
	}
	now := m.now()
	ms := now.UnixMilli()
	e := m.entryLocked(key, now)
	e.last = now
	if q.strict {
		if tokens := e.bucket.Measure(m.window, limit, ms); tokens < 0 {
			q.throttleMs, q.recordedAt = bucketThrottle(tokens, limit), now
			return ErrThrottled
		}
		e.bucket.Record(m.window, limit, permits, ms)
		return nil
	}
	e.bucket.Record(m.window, limit, permits, ms)
	if tokens := e.bucket.Measure(m.window, limit, ms); tokens < 0 {
		q.throttleMs, q.recordedAt = bucketThrottle(tokens, limit), now
	}
	return nil
}

// ThrottleTime is the throttle earned, less the time since it was: the
// answer may go out well after the mutation was recorded.
func (q *MutationQuota) ThrottleTime() time.Duration {
	if q.throttleMs == 0 {
		return 0
	}
	left := q.throttleMs - q.mm.m.now().Sub(q.recordedAt).Milliseconds()
	return time.Duration(max(left, 0)) * time.Millisecond
}

// Enabled reports whether any entity sets controller_mutation_rate.
func (mm *MutationManager) Enabled() bool { return mm.m.Enabled() }
