package broker

// Client quota enforcement (package quota has the semantics): the quotas
// under /config/users and /config/clients are loaded at start and on
// each change notification, a Produce records its bytes against the
// client's producer_byte_rate, and a client over it is told
// throttle_time_ms at once and its connection muted for that time, as
// Kafka 2.0+ does (KIP-219).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

// reloadClientQuotas reads every stored quota into the managers. On a
// read error the quotas in force stay.
func (b *Broker) reloadClientQuotas(ctx context.Context) {
	t, err := controller.ClientQuotas(ctx, b.store)
	if err != nil {
		b.logger.Warn("reload client quotas", "err", err)
		return
	}
	b.produceQuota.SetTable(t)
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

// muteFor stops applying (and, once maxInFlight frames wait, reading)
// this connection's requests for d, or until it ends: the throttled
// client's channel is muted.
func (c *conn) muteFor(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
