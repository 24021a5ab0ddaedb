package cluster

import (
	"context"
	"crypto/rand"
	"crypto/x509/pkix"
	"fmt"
	"testing"
	"time"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/controller/zkstore"
	"github.com/brook-mq/brook/internal/testutil"
)

// interBrokerEnv names the inter-broker security protocol every cluster
// test runs with ("SSL" or "SASL_SSL"; empty: PLAINTEXT). make
// cluster-sasl-ssl sets it to SASL_SSL. The tests' own clients stay on
// the PLAINTEXT listener either way.
const interBrokerEnv = "BROOK_CLUSTER_INTER_BROKER"

// The inter-broker SASL credential: SCRAM-SHA-512, as Kafka's docs set up
// inter-broker SCRAM, created in ZooKeeper before the brokers start.
const (
	interBrokerUser, interBrokerPassword = "broker", "broker-secret"
	interBrokerMechanism                 = "SCRAM-SHA-512"
)

// interBroker is the security of a cluster's INTERNAL (inter-broker)
// listener: mutual TLS with one certificate per broker, plus SCRAM for
// SASL_SSL. Each broker keeps its two ports across restarts.
type interBroker struct {
	t        *testing.T
	protocol string
	ca       *testutil.CA
	trust    string
	stores   map[int32]string
	ports    map[int32][2]int
}

// newInterBroker prepares an INTERNAL listener of protocol (SSL or
// SASL_SSL) for the cluster whose ZooKeeper is zkConnect (with chroot),
// writing the SCRAM credential there first for SASL_SSL.
func newInterBroker(t *testing.T, protocol, zkConnect string) *interBroker {
	t.Helper()
	if protocol != "SSL" && protocol != "SASL_SSL" {
		t.Fatalf("inter-broker protocol %q: want SSL or SASL_SSL", protocol)
	}
	ca := testutil.NewCA(t)
	ib := &interBroker{t: t, protocol: protocol, ca: ca, trust: ca.TrustStoreJKS("trust-secret"),
		stores: map[int32]string{}, ports: map[int32][2]int{}}
	if protocol == "SASL_SSL" {
		createScramUser(t, zkConnect, interBrokerUser, interBrokerPassword, interBrokerMechanism)
	}
	return ib
}

// config is broker id's listener settings: PLAINTEXT first (the tests'
// clients and testutil.Process.Addr use it), then INTERNAL.
func (ib *interBroker) config(id int32) map[string]string {
	p, ok := ib.ports[id]
	if !ok {
		p = [2]int{testutil.FreePort(ib.t), testutil.FreePort(ib.t)}
		ib.ports[id] = p
	}
	ks, ok := ib.stores[id]
	if !ok {
		leaf := ib.ca.Issue(pkix.Name{CommonName: fmt.Sprintf("broker-%d", id)}, "localhost", "127.0.0.1")
		ks = leaf.KeyStorePKCS12("ks-secret")
		ib.stores[id] = ks
	}
	cfg := map[string]string{
		"listeners":                      fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d", p[0], p[1]),
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:" + ib.protocol,
		"inter.broker.listener.name":     "INTERNAL",
		// Per listener, as Kafka's docs advise for inter-broker TLS.
		"listener.name.internal.ssl.client.auth":         "required",
		"listener.name.internal.ssl.truststore.type":     "JKS",
		"listener.name.internal.ssl.truststore.location": ib.trust,
		"listener.name.internal.ssl.truststore.password": "trust-secret",
		"listener.name.internal.ssl.keystore.type":       "PKCS12",
		"listener.name.internal.ssl.keystore.location":   ks,
		"listener.name.internal.ssl.keystore.password":   "ks-secret",
	}
	if ib.protocol == "SASL_SSL" {
		cfg["sasl.enabled.mechanisms"] = interBrokerMechanism
		cfg["sasl.mechanism.inter.broker.protocol"] = interBrokerMechanism
		cfg["listener.name.internal.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="` +
			interBrokerUser + `" password="` + interBrokerPassword + `";`
	}
	return cfg
}

// createScramUser writes user's SCRAM credential for mechanism into
// ZooKeeper with Brook's own code (what AlterUserScramCredentials and
// Kafka's kafka-configs --zookeeper write), before any broker runs: the
// brokers need it to authenticate to each other.
func createScramUser(t *testing.T, zkConnect, user, password, mechanism string) {
	t.Helper()
	mech, ok := auth.ScramMechanismByName(mechanism)
	if !ok {
		t.Fatalf("no SCRAM mechanism %s", mechanism)
	}
	salt := make([]byte, 16)
	rand.Read(salt)
	cred, err := mech.NewCredential(password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := zkstore.Dial(ctx, zkstore.Options{Connect: zkConnect, SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatalf("dial ZooKeeper for the SCRAM credential: %v", err)
	}
	defer st.Close()
	v := auth.FormatScramCredential(cred)
	if err := controller.AlterUserConfigs(ctx, st, user, map[string]*string{mechanism: &v}); err != nil {
		t.Fatalf("create SCRAM credential of %s: %v", user, err)
	}
}
