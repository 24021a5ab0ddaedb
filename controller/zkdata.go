package controller

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/brook-mq/brook/controller/store"
)

// This file holds Kafka's ZooKeeper-mode layout (kafka/zk/ZkData.scala in
// Kafka 3.x): paths and the JSON shapes stored in them, so operators' tools
// and habits work against a Brook cluster's ZooKeeper.

// Store is the metadata store the controller and the broker helpers use.
type Store = store.Store

// Znode paths.
const (
	BrokersPath         = "/brokers"
	BrokerIDsPath       = "/brokers/ids"
	TopicsPath          = "/brokers/topics"
	BrokerSeqIDPath     = "/brokers/seqid"
	ControllerPath      = "/controller"
	ControllerEpochPath = "/controller_epoch"
	ConfigPath          = "/config"
	ConfigTopicsPath    = "/config/topics"
	ConfigChangesPath   = "/config/changes"
	AdminPath           = "/admin"
	DeleteTopicsPath    = "/admin/delete_topics"
	ClusterIDPath       = "/cluster/id"
	ProducerIDBlockPath = "/latest_producer_id_block"
	IsrChangePath       = "/isr_change_notification"
	LogDirEventPath     = "/log_dir_event_notification"
	ConsumersPath       = "/consumers"

	// ConfigChangePrefix names sequential children of ConfigChangesPath.
	ConfigChangePrefix = "config_change_"
)

// persistentPaths are created at broker start-up, as Kafka's
// KafkaZkClient.createTopLevelPaths does (its ZkData.PersistentZkPaths).
func persistentPaths() []string {
	return []string{
		ConsumersPath, BrokerIDsPath, TopicsPath, ConfigChangesPath, DeleteTopicsPath,
		BrokerSeqIDPath, IsrChangePath, ProducerIDBlockPath, LogDirEventPath,
		"/config/topics", "/config/clients", "/config/users", "/config/brokers", "/config/ips",
	}
}

// BrokerPath is a broker's registration node.
func BrokerPath(id int32) string { return BrokerIDsPath + "/" + strconv.Itoa(int(id)) }

// TopicPath holds a topic's replica assignment and topic id.
func TopicPath(topic string) string { return TopicsPath + "/" + topic }

// PartitionsPath is the parent of a topic's partition nodes.
func PartitionsPath(topic string) string { return TopicPath(topic) + "/partitions" }

// PartitionPath is the parent of a partition's state node.
func PartitionPath(topic string, p int32) string {
	return PartitionsPath(topic) + "/" + strconv.Itoa(int(p))
}

// PartitionStatePath holds a partition's leader, leader epoch and ISR.
func PartitionStatePath(topic string, p int32) string { return PartitionPath(topic, p) + "/state" }

// TopicConfigPath holds a topic's config overrides.
func TopicConfigPath(topic string) string { return ConfigTopicsPath + "/" + topic }

// DeleteTopicPath marks a topic for deletion.
func DeleteTopicPath(topic string) string { return DeleteTopicsPath + "/" + topic }

// ErrBadZnodeData is returned when a znode's content cannot be decoded.
var ErrBadZnodeData = errors.New("controller: bad znode data")

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Name             string // listener name, e.g. PLAINTEXT or INTERNAL
	Host             string
	Port             int32
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
}

// ConnectionString is Kafka's EndPoint.connectionString: NAME://host:port,
// with brackets around IPv6 hosts.
func (e Endpoint) ConnectionString() string {
	return e.Name + "://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// BrokerInfo is a broker's registration.
type BrokerInfo struct {
	ID        int32
	Endpoints []Endpoint
	Rack      string // empty: no rack
	// Epoch is the czxid of the registration node; filled in when read.
	Epoch int64
}

type brokerJSON struct {
	Features                    map[string]json.RawMessage `json:"features"`
	ListenerSecurityProtocolMap map[string]string          `json:"listener_security_protocol_map"`
	Endpoints                   []string                   `json:"endpoints"`
	JmxPort                     int32                      `json:"jmx_port"`
	Port                        int32                      `json:"port"`
	Host                        *string                    `json:"host"`
	Version                     int                        `json:"version"`
	Timestamp                   string                     `json:"timestamp"`
	Rack                        *string                    `json:"rack,omitempty"`
}

// encodeBroker writes the v5 registration Kafka 2.7+ writes. As in Kafka,
// the top-level host and port are those of the first PLAINTEXT endpoint
// (null and -1 without one), and rack is omitted when unset.
func encodeBroker(b BrokerInfo, nowMs int64) []byte {
	j := brokerJSON{
		Features:                    map[string]json.RawMessage{},
		ListenerSecurityProtocolMap: map[string]string{},
		Endpoints:                   []string{},
		JmxPort:                     -1,
		Port:                        -1,
		Version:                     5,
		Timestamp:                   strconv.FormatInt(nowMs, 10),
	}
	for _, e := range b.Endpoints {
		j.Endpoints = append(j.Endpoints, e.ConnectionString())
		j.ListenerSecurityProtocolMap[e.Name] = e.SecurityProtocol
		if e.SecurityProtocol == "PLAINTEXT" && j.Host == nil {
			h := e.Host
			j.Host, j.Port = &h, e.Port
		}
	}
	if b.Rack != "" {
		r := b.Rack
		j.Rack = &r
	}
	return mustJSON(j)
}

func decodeBroker(id int32, data []byte) (BrokerInfo, error) {
	var j brokerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return BrokerInfo{}, fmt.Errorf("%w: broker %d: %v", ErrBadZnodeData, id, err)
	}
	b := BrokerInfo{ID: id}
	if j.Rack != nil {
		b.Rack = *j.Rack
	}
	if j.Version <= 1 {
		if j.Host == nil {
			return BrokerInfo{}, fmt.Errorf("%w: broker %d: v1 registration without host", ErrBadZnodeData, id)
		}
		b.Endpoints = []Endpoint{{Name: "PLAINTEXT", Host: *j.Host, Port: j.Port, SecurityProtocol: "PLAINTEXT"}}
		return b, nil
	}
	for _, s := range j.Endpoints {
		e, err := parseEndpoint(s, j.ListenerSecurityProtocolMap)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("%w: broker %d: %v", ErrBadZnodeData, id, err)
		}
		b.Endpoints = append(b.Endpoints, e)
	}
	return b, nil
}

func parseEndpoint(s string, protocols map[string]string) (Endpoint, error) {
	name, hostPort, ok := strings.Cut(s, "://")
	if !ok {
		return Endpoint{}, fmt.Errorf("endpoint %q: no ://", s)
	}
	host, portStr, err := net.SplitHostPort(hostPort)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: %v", s, err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: port: %v", s, err)
	}
	proto := name // without a map, Kafka takes listener names to be protocol names
	if p, ok := protocols[name]; ok {
		proto = p
	}
	return Endpoint{Name: name, Host: host, Port: int32(port), SecurityProtocol: proto}, nil
}

// TopicAssignment is the content of /brokers/topics/<t>.
type TopicAssignment struct {
	Name       string
	TopicID    [16]byte
	Partitions map[int32][]int32 // partition -> replicas, preferred leader first
	Adding     map[int32][]int32
	Removing   map[int32][]int32
}

type topicJSON struct {
	Version          int                `json:"version"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
	TopicID          string             `json:"topic_id,omitempty"`
}

func encodeTopic(a TopicAssignment) []byte {
	conv := func(m map[int32][]int32) map[string][]int32 {
		out := map[string][]int32{}
		for p, r := range m {
			if len(r) > 0 {
				out[strconv.Itoa(int(p))] = r
			}
		}
		return out
	}
	j := topicJSON{
		Version:          3,
		Partitions:       conv(a.Partitions),
		AddingReplicas:   conv(a.Adding),
		RemovingReplicas: conv(a.Removing),
	}
	if a.TopicID != ([16]byte{}) {
		j.TopicID = UUIDString(a.TopicID)
	}
	return mustJSON(j)
}

func decodeTopic(name string, data []byte) (TopicAssignment, error) {
	var j topicJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return TopicAssignment{}, fmt.Errorf("%w: topic %s: %v", ErrBadZnodeData, name, err)
	}
	a := TopicAssignment{Name: name, Partitions: map[int32][]int32{}, Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}
	if j.TopicID != "" {
		id, err := ParseUUID(j.TopicID)
		if err != nil {
			return TopicAssignment{}, fmt.Errorf("%w: topic %s: %v", ErrBadZnodeData, name, err)
		}
		a.TopicID = id
	}
	for _, src := range []struct {
		from map[string][]int32
		to   map[int32][]int32
	}{{j.Partitions, a.Partitions}, {j.AddingReplicas, a.Adding}, {j.RemovingReplicas, a.Removing}} {
		for k, r := range src.from {
			p, err := strconv.ParseInt(k, 10, 32)
			if err != nil || p < 0 {
				return TopicAssignment{}, fmt.Errorf("%w: topic %s: partition %q", ErrBadZnodeData, name, k)
			}
			src.to[int32(p)] = r
		}
	}
	for p, r := range a.Partitions {
		// Every partition needs a replica: the preferred leader is the first.
		if len(r) == 0 {
			return TopicAssignment{}, fmt.Errorf("%w: topic %s: partition %d has no replicas", ErrBadZnodeData, name, p)
		}
	}
	return a, nil
}

// PartitionState is the content of .../partitions/<p>/state plus the node's
// version, which fences concurrent writers (ZkVersion in LeaderAndISR).
type PartitionState struct {
	Leader              int32
	LeaderEpoch         int32
	ISR                 []int32
	ControllerEpoch     int32
	LeaderRecoveryState int8 // 0 recovered, 1 recovering
	ZkVersion           int32
	// Mzxid is the zxid of the node's last write (0 when not read from
	// the store): a broker registered after it (BrokerInfo.Epoch is the
	// czxid) restarted since its place in this state was written.
	Mzxid int64
}

type partitionStateJSON struct {
	ControllerEpoch     int32   `json:"controller_epoch"`
	Leader              int32   `json:"leader"`
	Version             int     `json:"version"`
	LeaderEpoch         int32   `json:"leader_epoch"`
	ISR                 []int32 `json:"isr"`
	LeaderRecoveryState *int8   `json:"leader_recovery_state,omitempty"`
}

// DecodePartitionState decodes a state znode read with stat, for drivers
// outside this package: the deterministic simulation (sim/) loads partition
// states as the controller does and checks invariants against them.
func DecodePartitionState(data []byte, stat store.Stat) (PartitionState, error) {
	return decodePartitionState(data, stat)
}

func encodePartitionState(s PartitionState) []byte {
	j := partitionStateJSON{ControllerEpoch: s.ControllerEpoch, Leader: s.Leader, Version: 1, LeaderEpoch: s.LeaderEpoch, ISR: s.ISR}
	if j.ISR == nil {
		j.ISR = []int32{}
	}
	if s.LeaderRecoveryState != 0 {
		r := s.LeaderRecoveryState
		j.LeaderRecoveryState = &r
	}
	return mustJSON(j)
}

func decodePartitionState(data []byte, st store.Stat) (PartitionState, error) {
	var j partitionStateJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return PartitionState{}, fmt.Errorf("%w: partition state: %v", ErrBadZnodeData, err)
	}
	s := PartitionState{Leader: j.Leader, LeaderEpoch: j.LeaderEpoch, ISR: j.ISR, ControllerEpoch: j.ControllerEpoch, ZkVersion: st.Version, Mzxid: st.Mzxid}
	if j.LeaderRecoveryState != nil {
		s.LeaderRecoveryState = *j.LeaderRecoveryState
	}
	return s, nil
}

type controllerJSON struct {
	Version              int    `json:"version"`
	BrokerID             int32  `json:"brokerid"`
	Timestamp            string `json:"timestamp"`
	KRaftControllerEpoch int32  `json:"kraftControllerEpoch"`
}

func encodeController(id int32, nowMs int64) []byte {
	return mustJSON(controllerJSON{Version: 2, BrokerID: id, Timestamp: strconv.FormatInt(nowMs, 10), KRaftControllerEpoch: -1})
}

func decodeController(data []byte) (int32, error) {
	var j controllerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return -1, fmt.Errorf("%w: controller: %v", ErrBadZnodeData, err)
	}
	return j.BrokerID, nil
}

func decodeControllerEpoch(data []byte) (int32, error) {
	e, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: controller epoch %q", ErrBadZnodeData, data)
	}
	return int32(e), nil
}

type configJSON struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

func encodeConfig(cfg map[string]string) []byte {
	if cfg == nil {
		cfg = map[string]string{}
	}
	return mustJSON(configJSON{Version: 1, Config: cfg})
}

func decodeConfig(data []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(data) == 0 {
		return out, nil
	}
	var j struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: config: %v", ErrBadZnodeData, err)
	}
	for k, raw := range j.Config {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			// Kafka reads values with to[String]; tolerate numbers written by hand.
			s = string(raw)
		}
		out[k] = s
	}
	return out, nil
}

func encodeConfigChange(entityPath string) []byte {
	return mustJSON(struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
	}{2, entityPath})
}

func decodeConfigChange(data []byte) (string, error) {
	var j struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
		EntityType string `json:"entity_type"`
		EntityName string `json:"entity_name"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return "", fmt.Errorf("%w: config change: %v", ErrBadZnodeData, err)
	}
	if j.Version == 1 {
		return strings.ToLower(j.EntityType) + "/" + j.EntityName, nil
	}
	return j.EntityPath, nil
}

type clusterIDJSON struct {
	Version string `json:"version"`
	ID      string `json:"id"`
}

type producerIDBlockJSON struct {
	Version    int64  `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// UUIDString prints a UUID as Kafka's Uuid.toString does: URL-safe base64
// without padding (22 characters).
func UUIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseUUID parses Kafka's Uuid string form.
func ParseUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("controller: bad uuid %q", s)
	}
	copy(id[:], b)
	return id, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only fixed struct types of this file are marshalled; failure is a bug.
		panic(fmt.Sprintf("controller: marshal %T: %v", v, err))
	}
	return b
}

func sortedInt32(m map[int32][]int32) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// partitionListJSON is the body of an ISR change notification and of
// /admin/preferred_replica_election, as Kafka writes both:
// {"version":1,"partitions":[{"topic":"t","partition":0}]}.
type partitionListJSON struct {
	Version    int                `json:"version"`
	Partitions []partitionRefJSON `json:"partitions"`
}

type partitionRefJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// encodePartitionList writes tps as partitionListJSON.
func encodePartitionList(tps []TP) []byte {
	j := partitionListJSON{Version: 1}
	for _, tp := range tps {
		j.Partitions = append(j.Partitions, partitionRefJSON{tp.Topic, tp.Partition})
	}
	data, _ := json.Marshal(j)
	return data
}

// decodePartitionList reads partitionListJSON.
func decodePartitionList(data []byte) ([]TP, error) {
	var j partitionListJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: partition list %q: %v", ErrBadZnodeData, data, err)
	}
	out := make([]TP, 0, len(j.Partitions))
	for _, p := range j.Partitions {
		out = append(out, TP{p.Topic, p.Partition})
	}
	return out, nil
}
