package cluster

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestSSLInterBrokerFailover runs a cluster whose brokers talk to each
// other over an SSL listener with mutual TLS (each broker's certificate
// checked against the CA, and its host name against the certificate):
// the controller's requests and the followers' fetches go over TLS. The
// controller is killed; the survivors must fail over, and the restarted
// broker must catch up over TLS.
func TestSSLInterBrokerFailover(t *testing.T) {
	ca := testutil.NewCA(t)
	truststore := ca.TrustStoreJKS("trust-secret")
	stores := map[int32]string{}
	for id := int32(1); id <= 3; id++ {
		leaf := ca.Issue(pkix.Name{CommonName: fmt.Sprintf("broker-%d", id)}, "localhost", "127.0.0.1")
		stores[id] = leaf.KeyStorePKCS12("ks-secret")
	}
	ports := map[int32][2]int{}
	c := startClusterEach(t, 3, map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
		"inter.broker.listener.name":     "INTERNAL",
		"replica.lag.time.max.ms":        "120000",
		// Per listener, as Kafka's docs advise for inter-broker TLS.
		"listener.name.internal.ssl.client.auth":         "required",
		"listener.name.internal.ssl.truststore.type":     "JKS",
		"listener.name.internal.ssl.truststore.location": truststore,
		"listener.name.internal.ssl.truststore.password": "trust-secret",
		"listener.name.internal.ssl.keystore.type":       "PKCS12",
		"listener.name.internal.ssl.keystore.password":   "ks-secret",
	}, func(id int32) map[string]string {
		p, ok := ports[id]
		if !ok {
			p = [2]int{testutil.FreePort(t), testutil.FreePort(t)}
			ports[id] = p
		}
		return map[string]string{
			"listeners": fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d", p[0], p[1]),
			"listener.name.internal.ssl.keystore.location": stores[id],
		}
	})
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
}
