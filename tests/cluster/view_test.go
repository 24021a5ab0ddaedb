package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tp names one partition.
type tp struct {
	topic     string
	partition int32
}

func (p tp) String() string { return fmt.Sprintf("%s-%d", p.topic, p.partition) }

// partitionView is what a Metadata answer says about one partition.
type partitionView struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	ErrorCode   int16
}

// clusterView is one broker's Metadata answer in a form that compares with
// ==-like equality across brokers: sorted brokers, partitions by tp.
type clusterView struct {
	Controller int32
	Brokers    []string // "id@host:port", sorted by id
	BrokerIDs  []int32
	Partitions map[tp]partitionView
	TopicErrs  map[string]int16
}

func viewOf(resp *kmsg.MetadataResponse) clusterView {
	v := clusterView{
		Controller: resp.ControllerID,
		Partitions: map[tp]partitionView{},
		TopicErrs:  map[string]int16{},
	}
	brokers := slices.Clone(resp.Brokers)
	slices.SortFunc(brokers, func(a, b kmsg.MetadataResponseBroker) int { return int(a.NodeID - b.NodeID) })
	for _, b := range brokers {
		v.Brokers = append(v.Brokers, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
		v.BrokerIDs = append(v.BrokerIDs, b.NodeID)
	}
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if t.ErrorCode != 0 {
			v.TopicErrs[name] = t.ErrorCode
		}
		for _, p := range t.Partitions {
			v.Partitions[tp{name, p.Partition}] = partitionView{
				Leader:      p.Leader,
				LeaderEpoch: p.LeaderEpoch,
				Replicas:    slices.Clone(p.Replicas),
				ISR:         sortedIDs(p.ISR),
				ErrorCode:   p.ErrorCode,
			}
		}
	}
	return v
}

func sortedIDs(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// String prints the view in a stable order, for failure messages and for
// comparing views.
func (v clusterView) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "controller=%d brokers=%v", v.Controller, v.Brokers)
	for _, name := range slices.Sorted(maps.Keys(v.TopicErrs)) {
		fmt.Fprintf(&b, "\n  topic %s: %v", name, kerr.ErrorForCode(v.TopicErrs[name]))
	}
	for _, p := range v.sortedPartitions() {
		pv := v.Partitions[p]
		fmt.Fprintf(&b, "\n  %s leader=%d epoch=%d replicas=%v isr=%v", p, pv.Leader, pv.LeaderEpoch, pv.Replicas, pv.ISR)
		if pv.ErrorCode != 0 {
			fmt.Fprintf(&b, " err=%v", kerr.ErrorForCode(pv.ErrorCode))
		}
	}
	return b.String()
}

func (v clusterView) sortedPartitions() []tp {
	return slices.SortedFunc(maps.Keys(v.Partitions), func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
}

// topicPartitions returns the partitions of topic in the view, in order.
func (v clusterView) topicPartitions(topic string) []tp {
	var out []tp
	for _, p := range v.sortedPartitions() {
		if p.topic == topic {
			out = append(out, p)
		}
	}
	return out
}

// ledBy returns the partitions of topic whose leader is id.
func (v clusterView) ledBy(topic string, id int32) []tp {
	var out []tp
	for _, p := range v.topicPartitions(topic) {
		if v.Partitions[p].Leader == id {
			out = append(out, p)
		}
	}
	return out
}

// checkTopicHealthy reports the first way topic falls short of a healthy
// placement with brokers live: partitions 0..n-1 each with rf distinct
// replicas, a live replica as leader, an ISR of live brokers holding the
// leader, and (when fullISR) an ISR equal to the replica set.
func (v clusterView) checkTopicHealthy(topic string, partitions, rf int, brokers []int32, fullISR bool) error {
	if code, ok := v.TopicErrs[topic]; ok {
		return fmt.Errorf("topic %s: %v", topic, kerr.ErrorForCode(code))
	}
	tps := v.topicPartitions(topic)
	if len(tps) != partitions {
		return fmt.Errorf("topic %s has %d partitions, want %d", topic, len(tps), partitions)
	}
	for i, p := range tps {
		pv := v.Partitions[p]
		switch {
		case p.partition != int32(i):
			return fmt.Errorf("topic %s: partition %d where %d was expected", topic, p.partition, i)
		case pv.ErrorCode != 0:
			return fmt.Errorf("%s: %v", p, kerr.ErrorForCode(pv.ErrorCode))
		case len(pv.Replicas) != rf || len(sortedUnique(pv.Replicas)) != rf:
			return fmt.Errorf("%s: replicas %v, want %d distinct", p, pv.Replicas, rf)
		case !slices.Contains(brokers, pv.Leader) || !slices.Contains(pv.Replicas, pv.Leader):
			return fmt.Errorf("%s: leader %d is not a live replica (replicas %v, live %v)", p, pv.Leader, pv.Replicas, brokers)
		case !slices.Contains(pv.ISR, pv.Leader):
			return fmt.Errorf("%s: leader %d not in ISR %v", p, pv.Leader, pv.ISR)
		case !subset(pv.ISR, brokers):
			return fmt.Errorf("%s: ISR %v holds a broker that is not live (%v)", p, pv.ISR, brokers)
		case fullISR && !slices.Equal(pv.ISR, sortedIDs(pv.Replicas)):
			return fmt.Errorf("%s: ISR %v, want all replicas %v", p, pv.ISR, pv.Replicas)
		}
	}
	return nil
}

func sortedUnique(ids []int32) []int32 { return slices.Compact(sortedIDs(ids)) }

func subset(ids, of []int32) bool {
	for _, id := range ids {
		if !slices.Contains(of, id) {
			return false
		}
	}
	return true
}
