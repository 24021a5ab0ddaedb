package controller

import (
	"context"
	"fmt"
	"strconv"
)

// The active controller follows config changes for one reason: the
// unclean.leader.election.enable of each topic and of the brokers decides
// its elections. It loads them with the topics and then reads each change
// notification under /config/changes as it comes, through the event loop.

// loadUncleanDefault reads the broker-level unclean.leader.election.enable
// (the dynamic layers over the static value) into the state.
func (c *Controller) loadUncleanDefault(ctx context.Context) error {
	perBroker, err := EntityConfigs(ctx, c.st, EntityBrokers, strconv.Itoa(int(c.cfg.BrokerID)))
	if err != nil {
		return err
	}
	clusterDefault, err := EntityConfigs(ctx, c.st, EntityBrokers, DefaultBroker)
	if err != nil {
		return err
	}
	c.state.UncleanDefault = ResolveUncleanDefault(c.cfg.UncleanLeaderElection, perBroker, clusterDefault)
	return nil
}

// watchConfigChanges re-arms the watch on /config/changes and returns the
// notifications not yet handled. At load (reset) every notification
// present is taken as handled, since the configs were read afterwards.
func (c *Controller) watchConfigChanges(ctx context.Context, reset bool) ([]configChangeNode, error) {
	children, _, ch, err := c.st.ChildrenW(ctx, ConfigChangesPath)
	if err != nil {
		return nil, fmt.Errorf("watch config changes: %w", err)
	}
	c.forward(ctx, ch, func(p *pendingEvents) { p.configChanges = true })
	if reset {
		c.configSeq = -1
	}
	changes := changesAfter(children, c.configSeq)
	if reset {
		if n := len(changes); n > 0 {
			c.configSeq = changes[n-1].seq
		}
		return nil, nil
	}
	return changes, nil
}

// processConfigChanges handles the config change notifications that came
// since the last look: a topic's new overrides, or new dynamic broker
// configs of the default or of this broker, and the unclean elections
// they allow.
func (c *Controller) processConfigChanges(ctx context.Context) error {
	changes, err := c.watchConfigChanges(ctx, false)
	if err != nil {
		return err
	}
	self := strconv.Itoa(int(c.cfg.BrokerID))
	for _, n := range changes {
		c.configSeq = n.seq
		entityType, name, _, ok, err := readConfigChange(ctx, c.st, n.name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		var acts Actions
		switch {
		case entityType == EntityTopics:
			if c.state.Topics[name] == nil {
				continue
			}
			cfg, err := TopicConfigs(ctx, c.st, name)
			if err != nil {
				return err
			}
			acts = c.state.OnTopicConfig(name, cfg)
		case name == DefaultBroker || name == self:
			before := c.state.UncleanDefault
			if err := c.loadUncleanDefault(ctx); err != nil {
				return err
			}
			acts = c.state.OnUncleanDefault(c.state.UncleanDefault)
			if before != c.state.UncleanDefault {
				c.log.Info("broker-level unclean.leader.election.enable changed", "enabled", c.state.UncleanDefault)
			}
		default:
			continue
		}
		if len(acts.Writes) > 0 {
			c.log.Warn("unclean leader election after a config change: out-of-sync replicas lead, acknowledged records may be lost", "entity", entityType+"/"+name, "partitions", len(acts.Writes))
		}
		if err := c.execute(ctx, acts); err != nil {
			return err
		}
	}
	return nil
}
