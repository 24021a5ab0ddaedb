package replica

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Run starts the follower fetchers and, until ctx ends, checks ISRs for
// lagging followers every replica.lag.time.max.ms / 2 (as Kafka does) and
// sends ISR changes to the controller. It returns once every fetcher has
// stopped, so the logs may be closed after it.
func (m *Manager) Run(ctx context.Context) {
	m.fetchMu.Lock()
	m.runCtx = ctx
	for _, f := range m.fetchers {
		m.startFetcherLocked(f)
	}
	m.fetchMu.Unlock()
	defer func() {
		m.fetchMu.Lock()
		m.runCtx = nil
		m.fetchMu.Unlock()
		m.fetchWG.Wait()
	}()

	check := time.NewTicker(max(m.cfg.ReplicaLagTimeMax/2, time.Millisecond))
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-check.C:
			m.CheckISRs()
		case <-m.isrChanged:
		}
		if m.cfg.Cluster == nil {
			continue
		}
		if !m.sendISRChanges(ctx) {
			// Back off before retrying so a controller failover does not
			// meet a storm of requests.
			select {
			case <-ctx.Done():
				return
			case <-time.After(m.cfg.FetchBackoff):
			}
			m.wakeISRSender()
		}
	}
}

// CheckISRs proposes dropping lagging followers from the ISRs this broker
// leads; Run calls it every replica.lag.time.max.ms / 2. A driver without
// Run (the deterministic simulation, sim/) calls it on its own schedule.
func (m *Manager) CheckISRs() {
	for _, p := range m.All() {
		p.maybeShrinkISR()
	}
}

// SendISRChanges is one round of Run's ISR sender, for a driver without
// Run (sim/): it sends the pending ISR changes and reports false when the
// request or a change failed.
func (m *Manager) SendISRChanges(ctx context.Context) bool { return m.sendISRChanges(ctx) }

// sendISRChanges sends every pending ISR change in one AlterPartition
// request, as Kafka's AlterPartitionManager batches them, and applies the
// answer. It reports false when the request or any change failed, so that
// Run backs off before proposing again.
func (m *Manager) sendISRChanges(ctx context.Context) bool {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = m.localID, m.brokerEpoch()
	type key struct {
		id        [16]byte
		partition int32
	}
	sent := map[key]*Partition{}
	topics := map[[16]byte]int{}
	for _, p := range m.All() {
		rp, ok := p.takeProposal()
		if !ok {
			continue
		}
		i, ok := topics[p.topicID]
		if !ok {
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic, t.TopicID = p.tp.Topic, p.topicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[p.topicID] = i
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[key{p.topicID, p.tp.Partition}] = p
		// Debug, as Kafka's "Submitting ISR state change": the answer is
		// logged at Info ("ISR changed"). At Info, a leader taking back a
		// rejoined broker into 23,000 ISRs spent 0.3-0.4 s writing these
		// lines before it could send the request.
		m.logger.Debug("proposing ISR change", "partition", p.tp, "isr", rp.NewISR, "partition_epoch", rp.PartitionEpoch)
	}
	if len(sent) == 0 {
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, m.cfg.SocketTimeout)
	defer cancel()
	resp, err := m.cfg.Cluster.AlterPartition(rctx, req)
	if err == nil && resp.ErrorCode != 0 {
		err = errorForCode(resp.ErrorCode)
	}
	if err != nil {
		m.logger.Warn("AlterPartition failed", "err", err)
		for _, p := range sent {
			p.alterFailed()
		}
		return false
	}
	ok := true
	for _, rt := range resp.Topics {
		id := rt.TopidID
		if id == ([16]byte{}) {
			for _, p := range sent {
				if p.tp.Topic == rt.Topic {
					id = p.topicID
				}
			}
		}
		for _, rp := range rt.Partitions {
			p := sent[key{id, rp.Partition}]
			if p == nil {
				continue
			}
			delete(sent, key{id, rp.Partition})
			if err := p.applyAlterPartition(rp); err != nil {
				m.logger.Warn("ISR change refused", "partition", p.tp, "err", err)
				ok = false
			} else {
				m.logger.Info("ISR changed", "partition", p.tp, "isr", rp.ISR, "partition_epoch", rp.PartitionEpoch)
			}
		}
	}
	for _, p := range sent {
		p.alterFailed() // not in the answer
		ok = false
	}
	return ok
}
