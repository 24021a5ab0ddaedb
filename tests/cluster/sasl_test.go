package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestInterBrokerSASL runs two brokers whose inter-broker listener is
// SASL_PLAINTEXT with the inter-broker client authenticating with SCRAM
// (the username and password of the listener's JAAS config, checked
// against a credential in ZooKeeper; BROOK_SASL_FULL=1 adds PLAIN): the
// controller's requests and the follower's fetches authenticate, so an
// acks=all produce with min.insync.replicas=2 succeeds.
func TestInterBrokerSASL(t *testing.T) {
	mechs := []string{"SCRAM-SHA-512"}
	if os.Getenv("BROOK_SASL_FULL") == "1" {
		mechs = append(mechs, "PLAIN")
	}
	for _, mech := range mechs {
		t.Run(mech, func(t *testing.T) { interBrokerSASL(t, mech) })
	}
}

func interBrokerSASL(t *testing.T, mech string) {
	zk := testutil.StartZooKeeper(t)
	connect := zk.Connect() + zkChroot
	if mech != "PLAIN" {
		// The brokers' own credential must exist before they start, as
		// with Kafka (kafka-configs --zookeeper): written by a first
		// broker's AlterUserScramCredentials, which needs no peer.
		boot := testutil.StartBrook(t, brookBin, map[string]string{"broker.id": "9", "zookeeper.connect": connect})
		adm := kadm.NewClient(testutil.Client(t, boot.Addr()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "broker", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "broker-secret"}})
		cancel()
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("create the brokers' SCRAM credential: %v", err)
		}
		boot.Stop()
	}
	jaas := map[string]string{
		"PLAIN":         `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret";`,
		"SCRAM-SHA-512": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
	}[mech]
	var brokers []*testutil.Process
	for id := 1; id <= 2; id++ {
		plain, sasl := testutil.FreePort(t), testutil.FreePort(t)
		brokers = append(brokers, testutil.StartBrook(t, brookBin, map[string]string{
			"broker.id":                            strconv.Itoa(id),
			"zookeeper.connect":                    connect,
			"zookeeper.session.timeout.ms":         strconv.Itoa(int(sessionTimeout.Milliseconds())),
			"listeners":                            fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plain, sasl),
			"inter.broker.listener.name":           "SASL_PLAINTEXT",
			"sasl.enabled.mechanisms":              mech,
			"sasl.mechanism.inter.broker.protocol": mech,
			"listener.name.sasl_plaintext." + strings.ToLower(mech) + ".sasl.jaas.config": jaas,
		}))
	}
	cl := testutil.Client(t, brokers[0].Addr()+","+brokers[1].Addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout)
	defer cancel()
	testutil.Eventually(t, convergeTimeout, func() error {
		resp, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "sasl-replicated")
		if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			err = resp.Err
		}
		return err
	})
	testutil.Eventually(t, convergeTimeout, func() error {
		pctx, pcancel := context.WithTimeout(ctx, requestTimeout)
		defer pcancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: "sasl-replicated", Value: []byte("x")}).FirstErr()
	})
	for _, b := range brokers {
		if tail := b.LogTail(200); strings.Contains(tail, "SASL authentication failed") {
			t.Errorf("broker log shows inter-broker authentication failures:\n%s", tail)
		}
	}
}
