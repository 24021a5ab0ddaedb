package broker

// Client quota enforcement (package quota has the semantics): the quotas
// under /config/users and /config/clients are loaded at start and on
// each change notification, a Produce records its bytes against the
// client's producer_byte_rate, and a client over it is told
// throttle_time_ms at once and its connection muted for that time, as
// Kafka 2.0+ does (KIP-219).

import (
	"context"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/quota"
)

// reloadClientQuotas reads every stored quota into the managers. On a
// read error the quotas in force stay.
func (b *Broker) reloadClientQuotas(ctx context.Context) {
	t, err := controller.ClientQuotas(ctx, b.store)
	if err != nil {
		b.logger.Warn("reload client quotas", "err", err)
		return
	}
	b.setClientQuotas(t)
}

// patchClientQuotas applies one entity's change notification, whose
// configs the watch has read, without reading every other entity again.
func (b *Broker) patchClientQuotas(ctx context.Context, entityType, name string, cfg map[string]string) {
	e, ok := controller.ClientQuotaEntity(entityType, name)
	if !ok || b.clientQuotas == nil {
		b.reloadClientQuotas(ctx)
		return
	}
	// The managers share the table: a new one, not a change under them.
	t := maps.Clone(b.clientQuotas)
	if v := controller.QuotaValues(e, cfg); len(v) > 0 {
		t[e] = v
	} else {
		delete(t, e)
	}
	b.setClientQuotas(t)
}

func (b *Broker) setClientQuotas(t quota.Table) {
	b.clientQuotas = t
	b.produceQuota.SetTable(t)
	b.fetchQuota.SetTable(t)
	b.requestQuota.SetTable(t)
	b.mutationQuotas.SetTable(t)
	b.quotas.setIPQuotas(t)
}

// recordProduce records a Produce's record bytes for its client and
// returns how long the client is throttled.
func (b *Broker) recordProduce(r *request, req *kmsg.ProduceRequest) time.Duration {
	if !b.produceQuota.Enabled() {
		return 0
	}
	var bytes int
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			bytes += len(p.Records)
		}
	}
	return b.produceQuota.Record(r.principal.Name, r.clientID, float64(bytes))
}

// mute stops applying (and, once maxInFlight frames wait, reading) this
// connection's requests for d from now, or until it ends: the throttled
// client's channel is muted. A longer mute already in force stays.
func (c *conn) mute(d time.Duration) {
	if d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted waits until the connection's mute ends or ctx does.
func (c *conn) waitUnmuted(ctx context.Context) {
	d := time.Until(time.Unix(0, c.mutedUntil.Load()))
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// throttleMillis is d as a response's throttle_time_ms, which is an
// int32: a longer throttle says the most it can.
func throttleMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), int64(1<<31-1)))
}

// raiseThrottle sets a response's throttle_time_ms to d unless it says
// more already; a response type without the field is left as is (its
// connection is muted all the same, as Kafka does).
func raiseThrottle(resp kmsg.Response, d time.Duration) {
	ms := throttleMillis(d)
	if ms <= 0 {
		return
	}
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		if cur, _ := tr.Throttle(); cur < ms {
			resp.(kmsg.SetThrottleResponse).SetThrottle(ms)
		}
	}
}

// throttleOf is a response's throttle_time_ms, zero without the field.
func throttleOf(resp kmsg.Response) time.Duration {
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		ms, _ := tr.Throttle()
		return time.Duration(ms) * time.Millisecond
	}
	return 0
}

// fetchMaxBytes is the most a fetch reads: its max_bytes, capped by
// fetch.max.bytes as in Kafka, and for a consumer with a
// consumer_byte_rate by what its quota lets through in one measurement
// (KAFKA-9677), or a fetch larger than that would be throttled and
// answered empty every time.
func (b *Broker) fetchMaxBytes(r *request, req *kmsg.FetchRequest) int {
	n := int(min(req.MaxBytes, b.cfg.FetchMaxBytes))
	if fetchReplicaID(req) >= 0 || !b.fetchQuota.Enabled() {
		return n
	}
	if v, ok := b.fetchQuota.MaxValueInWindow(r.principal.Name, r.clientID); ok {
		n = int(min(float64(n), v))
	}
	return n
}

// throttleFetch records a consumer's fetch, its response's size against
// consumer_byte_rate and busy, its handling time, against
// request_percentage, and returns how long the consumer is throttled.
// As Kafka, a throttled fetch is answered empty, its bytes taken back
// from the rate since they are not sent. A follower's fetch is exempt
// from both: replication quotas bound it.
//
// results, when not nil, say which partitions an incremental session's
// answer carries (peekFetchSession): only those are counted, as Kafka's
// getResponseSize.
func (b *Broker) throttleFetch(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, regions [][]log.Slice, targets []fetchTarget, results []fetchSessionResult, busy time.Duration) time.Duration {
	if fetchReplicaID(req) >= 0 {
		return 0
	}
	var size float64
	var bandwidth time.Duration
	if b.fetchQuota.Enabled() {
		size = float64(fetchResponseSize(resp, regions, results))
		bandwidth = b.fetchQuota.Record(r.principal.Name, r.clientID, size)
	}
	throttle := max(bandwidth, b.recordRequestTime(r, busy))
	if throttle <= 0 {
		return 0
	}
	if size > 0 {
		b.fetchQuota.RecordNoThrottle(r.principal.Name, r.clientID, -size)
	}
	for _, t := range targets {
		*t.region = log.Slice{} // nothing read is sent, or counted as sent
	}
	resp.Topics = nil
	resp.ThrottleMillis = throttleMillis(throttle)
	return throttle
}

// fetchResponseSize is the size of resp's body as sent, records included;
// with results (in the order of the response's partitions), of the
// partitions whose result says send only.
func fetchResponseSize(resp *kmsg.FetchResponse, regions [][]log.Slice, results []fetchSessionResult) int {
	if results != nil {
		resp, regions = sentFetchResponse(resp, regions, results)
	}
	n := 0
	for _, c := range encodeFetch(nil, resp, regions) {
		n += len(c.bytes) + int(c.region.Size)
	}
	return n
}
