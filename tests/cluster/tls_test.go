package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSSLInterBrokerFailover runs a cluster whose brokers talk to each
// other over an SSL listener with mutual TLS (each broker's certificate
// checked against the CA, and its host name against the certificate), and
// one whose inter-broker listener is SASL_SSL (the same TLS, then
// SCRAM-SHA-512 with a credential written to ZooKeeper first): the
// controller's requests and the followers' fetches go over TLS. The
// controller is killed; the survivors must fail over, and the restarted
// broker must catch up over TLS.
func TestSSLInterBrokerFailover(t *testing.T) {
	for _, protocol := range []string{"SSL", "SASL_SSL"} {
		t.Run(protocol, func(t *testing.T) { interBrokerFailover(t, protocol) })
	}
}

func interBrokerFailover(t *testing.T, protocol string) {
	c := startClusterInter(t, 3, map[string]string{"replica.lag.time.max.ms": "120000"}, nil, protocol)
	const topic, partitions = "tls-failover", 3
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))

	ctx, cancel := context.WithTimeout(context.Background(), 2*convergeTimeout)
	defer cancel()
	cl := producer(t, c.bootstrap())
	if err := produceSeqs(ctx, cl, topic, partitions, 0, 50); err != nil {
		t.Fatal(err)
	}

	old := before.Controller
	c.kill9(old)
	live := c.others(old)
	c.converge(live, func(v clusterView) error {
		if v.Controller == old {
			return fmt.Errorf("controller is still the killed broker %d", old)
		}
		return checkFailedOver(v, before, topic, old, live)
	})
	if err := produceSeqs(ctx, cl, topic, partitions, 50, 50); err != nil {
		t.Fatal(err)
	}

	c.restart(old)
	// Back in every ISR: it fetched what it missed over TLS.
	c.converge(c.ids, func(v clusterView) error {
		return v.checkTopicHealthy(topic, partitions, 3, c.ids, false)
	})
	checkSeqs(t, topic, consumeSeqs(t, c.bootstrap(), topic, partitions, 100, time.Minute), partitions, 100)
	for _, id := range c.ids {
		if tail := c.broker(id).LogTail(200); strings.Contains(tail, "authentication failed") {
			t.Errorf("broker %d log shows inter-broker authentication failures:\n%s", id, tail)
		}
	}
}
