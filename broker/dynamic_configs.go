package broker

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/controller"
)

// dynamicConfigs holds the broker configs set at runtime, as Kafka keeps
// them in ZooKeeper: per broker (/config/brokers/<id>) over the cluster
// default (/config/brokers/<default>) over server.properties. The effective
// configs feed topic defaults (log.retention.ms, message.max.bytes, ...)
// and DescribeConfigs; settings read only at start-up keep their static
// value, as Kafka allows dynamic updates only of the ones it can apply.
type dynamicConfigs struct {
	mu        sync.Mutex
	effective *config.Broker
}

// effectiveConfig is the broker config with its dynamic layers.
func (b *Broker) effectiveConfig() *config.Broker {
	b.dynamic.mu.Lock()
	defer b.dynamic.mu.Unlock()
	if b.dynamic.effective == nil {
		return b.cfg
	}
	return b.dynamic.effective
}

// reloadDynamicConfigs reads both dynamic layers from the store and applies
// them: topic configs resolve again, and hosted logs get their new configs.
func (b *Broker) reloadDynamicConfigs(ctx context.Context) error {
	perBroker, err := controller.EntityConfigs(ctx, b.store, controller.EntityBrokers, strconv.Itoa(int(b.cfg.BrokerID)))
	if err != nil {
		return err
	}
	clusterDefault, err := controller.EntityConfigs(ctx, b.store, controller.EntityBrokers, controller.DefaultBroker)
	if err != nil {
		return err
	}
	eff, err := b.cfg.WithDynamic(perBroker, clusterDefault)
	if err != nil {
		return fmt.Errorf("apply dynamic broker configs: %w", err)
	}
	b.dynamic.mu.Lock()
	b.dynamic.effective = eff
	b.dynamic.mu.Unlock()
	b.topics.setBroker(eff)
	if b.logs != nil {
		b.logs.SetCleanerConfig(cleanerConfig(eff))
	}
	if b.quotas != nil {
		b.quotas.wake() // max.connections may have risen
	}
	if b.replicas != nil {
		b.replicas.LeaderQuota().SetRate(eff.LeaderReplicationThrottledRate)
		b.replicas.FollowerQuota().SetRate(eff.FollowerReplicationThrottledRate)
		for _, p := range b.replicas.All() {
			b.replicas.UpdateConfig(p.TopicPartition().Topic)
		}
	}
	if b.logs != nil {
		b.logs.SetProducerIDExpiration(eff.ProducerIDExpiration)
	}
	return nil
}

// alterBrokerConfigs changes dynamic broker configs: name is this broker's
// id, or "" for the cluster-wide default. Configs that cannot change at
// runtime, or only per broker, are refused as Kafka refuses them.
func (b *Broker) alterBrokerConfigs(ctx context.Context, name string, changes []configChange, replace, validateOnly bool) (int16, string) {
	if code, msg := b.checkBrokerResource(name); code != 0 {
		return code, msg
	}
	entity := name
	if name == "" {
		entity = controller.DefaultBroker
	}
	current, err := controller.EntityConfigs(ctx, b.store, controller.EntityBrokers, entity)
	if err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	}
	next := map[string]string{}
	if !replace {
		next = maps.Clone(current)
	}
	eff := b.effectiveConfig()
	for _, c := range changes {
		effective := func() string { v, _ := eff.Value(c.name); return v }
		if code, msg := applyConfigChange(next, effective, c); code != 0 {
			return code, msg
		}
	}
	canonical, err := config.ValidateBrokerUpdate(next, name != "")
	if err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	if validateOnly {
		return 0, ""
	}
	if err := controller.SetEntityConfig(ctx, b.store, controller.EntityBrokers, entity, canonical); err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	}
	if err := b.reloadDynamicConfigs(ctx); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	return 0, ""
}

// brokerEntries describes the broker resource: this broker's effective
// configs, or for "" the cluster-wide dynamic defaults only.
func (b *Broker) brokerEntries(name string) []config.ConfigEntry {
	if name == "" {
		return b.effectiveConfig().BrokerDefaultEntries()
	}
	return b.effectiveConfig().BrokerEntries()
}
