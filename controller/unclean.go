package controller

import "strings"

// This file resolves unclean.leader.election.enable per topic, as Kafka's
// controller does at each election (it reads the topic's log config from
// ZooKeeper), and runs the elections a config change allows: Kafka 3.9's
// TopicConfigHandler calls the controller's enableTopicUncleanLeaderElection
// when a topic's override becomes true, and DynamicLogConfig calls
// enableDefaultUncleanLeaderElection when the broker default does.

// UncleanLeaderElectionConfig is the config's name, at topic and broker level.
const UncleanLeaderElectionConfig = "unclean.leader.election.enable"

// ResolveUncleanDefault is unclean.leader.election.enable for a topic
// without an override, with Kafka's precedence among broker configs: the
// controller broker's own dynamic config (/config/brokers/<id>), then the
// cluster-wide dynamic default (/config/brokers/<default>, what
// kafka-configs --entity-type brokers --entity-default sets), then the
// static value from server.properties.
func ResolveUncleanDefault(static bool, perBroker, clusterDefault map[string]string) bool {
	for _, layer := range []map[string]string{perBroker, clusterDefault} {
		if v := uncleanSetting(layer); v != nil {
			return *v
		}
	}
	return static
}

// uncleanSetting is the value of unclean.leader.election.enable in a config
// map, nil when it is absent or not a boolean. Values were validated when
// written; Kafka's boolean parsing ignores case and surrounding blanks.
func uncleanSetting(cfg map[string]string) *bool {
	v, ok := cfg[UncleanLeaderElectionConfig]
	if !ok {
		return nil
	}
	var b bool
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		b = true
	case "false":
	default:
		return nil
	}
	return &b
}

// uncleanAllowed reports whether an out-of-sync replica may lead topic's
// partitions: the topic override, else the broker-level default.
func (s *ClusterState) uncleanAllowed(topic string) bool {
	if t := s.Topics[topic]; t != nil && t.UncleanOverride != nil {
		return *t.UncleanOverride
	}
	return s.UncleanDefault
}

// OnTopicConfig records a topic's config overrides (after a change
// notification) and, if they now allow unclean election, elects leaders
// for its partitions that have none.
func (s *ClusterState) OnTopicConfig(topic string, cfg map[string]string) Actions {
	a := newActions()
	t := s.Topics[topic]
	if t == nil {
		return a
	}
	t.UncleanOverride = uncleanSetting(cfg)
	s.electOffline(&a, topic)
	return a
}

// OnUncleanDefault records a new broker-level default (after a dynamic
// broker config change) and elects leaders for partitions without one in
// every topic that it now allows to elect uncleanly.
func (s *ClusterState) OnUncleanDefault(enabled bool) Actions {
	a := newActions()
	s.UncleanDefault = enabled
	for _, name := range sortedKeys(s.Topics) {
		s.electOffline(&a, name)
	}
	return a
}

// electOffline re-runs the election of topic's offline partitions (no
// reachable leader) when unclean election is allowed for it. A clean
// election would already have happened when the leader went; only the
// changed config can make a difference, so nothing happens otherwise.
func (s *ClusterState) electOffline(a *Actions, topic string) {
	t := s.Topics[topic]
	if t == nil || s.Deleting[topic] || !s.uncleanAllowed(topic) {
		return
	}
	for _, p := range sortedKeys(t.States) {
		if st := t.States[p]; !s.reachable(st.Leader) {
			s.reelect(a, TP{topic, p}, nil)
		}
	}
}
