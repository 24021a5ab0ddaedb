package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/brook-mq/brook/controller/store"
)

// /feature, the cluster's finalized features (KIP-584) in ZooKeeper mode.
// Kafka's controller sets it up on every election, before anything else
// (KafkaController.maybeSetupFeatureVersioning): at an
// inter.broker.protocol.version of 2.7 or more, which is where Brook
// stands, an absent node is created enabled and a disabled one is switched
// to enabled with no features, while an enabled one is left as it is.
// Brook's controller does the same, so that whichever kind is elected
// leaves the node as the other would. Kafka writes JSON version 2 (IBP
// 3.3+, no min_version_level): {"features":{"metadata.version":
// {"max_version_level":21},...},"version":2,"status":1}. When Brook
// creates the node it finalizes no feature, since its brokers register
// none (registration in /brokers/ids lists "features":{}); features a
// Kafka controller finalized are kept.

// FeaturePath is the finalized-features znode.
const FeaturePath = "/feature"

// Feature znode statuses (Kafka's FeatureZNodeStatus) and JSON versions.
const (
	featureDisabled   = 0
	featureEnabled    = 1
	featureZNodeV1    = 1
	featureZNodeV2    = 2
	featureMaxLevel   = "max_version_level"
	featureMinLevelV1 = "min_version_level"
)

// FeatureZNode is the content of /feature.
type FeatureZNode struct {
	Version  int
	Status   int
	Features map[string]int16 // name -> finalized max version level
}

type featureZNodeJSON struct {
	Features map[string]map[string]int16 `json:"features"`
	Version  int                         `json:"version"`
	Status   *int                        `json:"status"`
}

// EncodeFeatureZNode writes f as Kafka does: version 1 carries each
// feature's level as both min_version_level and max_version_level,
// version 2 only max_version_level.
func EncodeFeatureZNode(f FeatureZNode) []byte {
	j := featureZNodeJSON{Features: map[string]map[string]int16{}, Version: f.Version, Status: &f.Status}
	for name, level := range f.Features {
		m := map[string]int16{featureMaxLevel: level}
		if f.Version == featureZNodeV1 {
			m[featureMinLevelV1] = level
		}
		j.Features[name] = m
	}
	data, _ := json.Marshal(j)
	return data
}

// DecodeFeatureZNode reads /feature, refusing what Kafka's
// FeatureZNode.decode refuses: an unknown version or status, no status, no
// features map, or a feature without max_version_level (or, in version 1,
// min_version_level).
func DecodeFeatureZNode(data []byte) (FeatureZNode, error) {
	var j featureZNodeJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return FeatureZNode{}, fmt.Errorf("%w: %s %q: %v", ErrBadZnodeData, FeaturePath, data, err)
	}
	bad := func(why string) (FeatureZNode, error) {
		return FeatureZNode{}, fmt.Errorf("%w: %s %q: %s", ErrBadZnodeData, FeaturePath, data, why)
	}
	if j.Version < featureZNodeV1 || j.Version > featureZNodeV2 {
		return bad("unsupported version")
	}
	if j.Status == nil || (*j.Status != featureDisabled && *j.Status != featureEnabled) {
		return bad("missing or unknown status")
	}
	if j.Features == nil {
		return bad("no features map")
	}
	f := FeatureZNode{Version: j.Version, Status: *j.Status, Features: map[string]int16{}}
	for name, levels := range j.Features {
		maxLevel, ok := levels[featureMaxLevel]
		if !ok || maxLevel < 1 {
			return bad("feature " + name + ": missing or invalid max_version_level")
		}
		if j.Version == featureZNodeV1 {
			minLevel, ok := levels[featureMinLevelV1]
			if !ok || minLevel < 1 || maxLevel < minLevel {
				return bad("feature " + name + ": missing or invalid min_version_level")
			}
		}
		f.Features[name] = maxLevel
	}
	return f, nil
}

// enabledFeatureZNode is what an elected controller at IBP 2.7+ wants
// /feature to hold given its current content (nil: absent): the same node
// when it is enabled, else an enabled version 2 node with no features.
func enabledFeatureZNode(cur *FeatureZNode) FeatureZNode {
	if cur != nil && cur.Status == featureEnabled {
		return *cur
	}
	return FeatureZNode{Version: featureZNodeV2, Status: featureEnabled, Features: map[string]int16{}}
}

// setupFeatures is Kafka's enableFeatureVersioning: create /feature when
// absent, enable it when disabled, leave it alone otherwise. A node that
// does not decode is left alone and logged (Kafka's controller would fail
// its election on it, over and over).
func (c *Controller) setupFeatures(ctx context.Context) error {
	data, stat, err := c.st.Get(ctx, FeaturePath)
	if errors.Is(err, store.ErrNoNode) {
		want := enabledFeatureZNode(nil)
		if _, err := c.st.Create(ctx, FeaturePath, EncodeFeatureZNode(want), 0); err != nil && !errors.Is(err, store.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", FeaturePath, err)
		}
		c.log.Info("created the finalized features znode", "path", FeaturePath, "content", string(EncodeFeatureZNode(want)))
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", FeaturePath, err)
	}
	cur, err := DecodeFeatureZNode(data)
	if err != nil {
		c.log.Error("leaving an unreadable finalized features znode alone", "err", err)
		return nil
	}
	want := enabledFeatureZNode(&cur)
	if want.Version == cur.Version && want.Status == cur.Status && maps.Equal(want.Features, cur.Features) {
		return nil
	}
	if len(cur.Features) > 0 {
		c.log.Warn("disabled finalized features znode lists features; clearing them", "content", string(data))
	}
	if _, err := c.st.Set(ctx, FeaturePath, EncodeFeatureZNode(want), stat.Version); err != nil {
		return fmt.Errorf("enable %s: %w", FeaturePath, err)
	}
	c.log.Info("enabled the finalized features znode", "path", FeaturePath)
	return nil
}
