package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"path"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkChroot is the chroot the brokers use, so that the tests also cover
// zookeeper.connect with a path.
const zkChroot = "/brook"

// zkView reads the cluster's znodes (Kafka's ZooKeeper-mode layout) as an
// operator would, through its own session.
type zkView struct {
	conn *zk.Conn
}

func dialZK(t testing.TB, connect string) *zkView {
	t.Helper()
	conn, _, err := zk.Connect([]string{connect}, 10*time.Second,
		zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatalf("connect to zookeeper %s: %v", connect, err)
	}
	t.Cleanup(conn.Close)
	return &zkView{conn: conn}
}

func (z *zkView) get(p string) ([]byte, *zk.Stat, error) {
	return z.conn.Get(path.Join(zkChroot, p))
}

// controllerID is the brokerid in /controller, or -1 when no controller is
// elected.
func (z *zkView) controllerID() (int32, error) {
	data, _, err := z.get("/controller")
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read /controller: %w", err)
	}
	var c struct {
		BrokerID int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, fmt.Errorf("decode /controller %q: %w", data, err)
	}
	return c.BrokerID, nil
}

// controllerEpoch is the number in /controller_epoch, 0 when missing.
func (z *zkView) controllerEpoch() (int64, error) {
	data, _, err := z.get("/controller_epoch")
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read /controller_epoch: %w", err)
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("decode /controller_epoch %q: %w", data, err)
	}
	return n, nil
}

// brokerIDs lists /brokers/ids, sorted, with the node's stat (its Pzxid is
// the zxid of the last registration or deregistration).
func (z *zkView) brokerIDs() ([]int32, *zk.Stat, error) {
	names, stat, err := z.conn.Children(path.Join(zkChroot, "/brokers/ids"))
	if err != nil {
		return nil, nil, fmt.Errorf("list /brokers/ids: %w", err)
	}
	var ids []int32
	for _, n := range names {
		id, err := strconv.ParseInt(n, 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("/brokers/ids/%s: not a broker id", n)
		}
		ids = append(ids, int32(id))
	}
	slices.Sort(ids)
	return ids, stat, nil
}

// brokerRegistration is the part of /brokers/ids/<id> the tests look at.
type brokerRegistration struct {
	Host  string `json:"host"`
	Port  int32  `json:"port"`
	owner int64
}

// registration reads /brokers/ids/<id>; ok is false when it is absent.
func (z *zkView) registration(id int32) (reg brokerRegistration, ok bool, err error) {
	data, stat, err := z.get(fmt.Sprintf("/brokers/ids/%d", id))
	if errors.Is(err, zk.ErrNoNode) {
		return reg, false, nil
	}
	if err != nil {
		return reg, false, fmt.Errorf("read /brokers/ids/%d: %w", id, err)
	}
	if err := json.Unmarshal(data, &reg); err != nil {
		return reg, false, fmt.Errorf("decode /brokers/ids/%d %q: %w", id, data, err)
	}
	reg.owner = stat.EphemeralOwner
	return reg, true, nil
}

// zkPartitionState is /brokers/topics/<t>/partitions/<p>/state.
type zkPartitionState struct {
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
	mzxid       int64
}

func (z *zkView) partitionState(topic string, partition int32) (zkPartitionState, error) {
	var st zkPartitionState
	p := fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, partition)
	data, stat, err := z.get(p)
	if err != nil {
		return st, fmt.Errorf("read %s: %w", p, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("decode %s %q: %w", p, data, err)
	}
	st.mzxid = stat.Mzxid
	return st, nil
}
