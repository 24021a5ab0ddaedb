package sarama_test

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`

// scramClient is the client side of SCRAM (RFC 5802) for sarama, which
// leaves it to the application.
type scramClient struct {
	newHash              func() hash.Hash
	user, pass, nonce    string
	firstBare, serverSig string
	step                 int
	done                 bool
}

func (c *scramClient) Begin(user, pass, _ string) error {
	var b [18]byte
	rand.Read(b[:])
	c.user, c.pass, c.nonce = user, pass, base64.RawStdEncoding.EncodeToString(b[:])
	return nil
}

func (c *scramClient) mac(key []byte, msg string) []byte {
	h := hmac.New(c.newHash, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func (c *scramClient) Step(challenge string) (string, error) {
	c.step++
	switch c.step {
	case 1:
		c.firstBare = "n=" + c.user + ",r=" + c.nonce
		return "n,," + c.firstBare, nil
	case 2:
		var nonce, salt64 string
		var iter int
		for _, f := range strings.Split(challenge, ",") {
			switch {
			case strings.HasPrefix(f, "r="):
				nonce = f[2:]
			case strings.HasPrefix(f, "s="):
				salt64 = f[2:]
			case strings.HasPrefix(f, "i="):
				fmt.Sscan(f[2:], &iter)
			}
		}
		salt, err := base64.StdEncoding.DecodeString(salt64)
		if err != nil || !strings.HasPrefix(nonce, c.nonce) {
			return "", fmt.Errorf("bad server-first %q", challenge)
		}
		salted, err := pbkdf2.Key(c.newHash, c.pass, salt, iter, c.newHash().Size())
		if err != nil {
			return "", err
		}
		withoutProof := "c=biws,r=" + nonce
		auth := c.firstBare + "," + challenge + "," + withoutProof
		clientKey := c.mac(salted, "Client Key")
		h := c.newHash()
		h.Write(clientKey)
		sig := c.mac(h.Sum(nil), auth)
		for i := range clientKey {
			clientKey[i] ^= sig[i]
		}
		c.serverSig = base64.StdEncoding.EncodeToString(c.mac(c.mac(salted, "Server Key"), auth))
		return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey), nil
	default:
		if challenge != "v="+c.serverSig {
			return "", fmt.Errorf("server signature %q, want v=%s", challenge, c.serverSig)
		}
		c.done = true
		return "", nil
	}
}

func (c *scramClient) Done() bool { return c.done }

// unsecuredToken is an unsigned JWS, which Kafka's default OAUTHBEARER
// validator accepts.
type unsecuredToken string

func (u unsecuredToken) Token() (*sarama.AccessToken, error) {
	claims, _ := json.Marshal(map[string]any{"sub": string(u), "exp": time.Now().Add(time.Hour).Unix()})
	enc := base64.RawURLEncoding.EncodeToString
	return &sarama.AccessToken{Token: enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "."}, nil
}

// saramaSASLCase sets one mechanism's sarama settings.
type saramaSASLCase struct {
	name string
	set  func(*sarama.Config)
}

// saramaSASLCases are the mechanisms with the users of TestSaramaSASL.
var saramaSASLCases = []saramaSASLCase{
	{"PLAIN", func(c *sarama.Config) {
		c.Net.SASL.Mechanism, c.Net.SASL.User, c.Net.SASL.Password = sarama.SASLTypePlaintext, "alice", "alice-secret"
	}},
	{"PLAIN-handshake-v0", func(c *sarama.Config) {
		c.Net.SASL.Mechanism, c.Net.SASL.User, c.Net.SASL.Password = sarama.SASLTypePlaintext, "alice", "alice-secret"
		// sarama's v0 clients send no ApiVersions, as before KIP-35.
		c.Net.SASL.Version, c.ApiVersionsRequest = sarama.SASLHandshakeV0, false
	}},
	{"SCRAM-SHA-256", func(c *sarama.Config) {
		c.Net.SASL.Mechanism, c.Net.SASL.User, c.Net.SASL.Password = sarama.SASLTypeSCRAMSHA256, "bob", "bob-secret"
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{newHash: sha256.New} }
	}},
	{"SCRAM-SHA-512", func(c *sarama.Config) {
		c.Net.SASL.Mechanism, c.Net.SASL.User, c.Net.SASL.Password = sarama.SASLTypeSCRAMSHA512, "bob", "bob-secret"
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{newHash: sha512.New} }
	}},
	{"OAUTHBEARER", func(c *sarama.Config) {
		c.Net.SASL.Mechanism, c.Net.SASL.TokenProvider = sarama.SASLTypeOAuth, unsecuredToken("dave")
	}},
}

// upsertScramUser gives bob both SCRAM credentials with sarama's
// ClusterAdmin.
func upsertScramUser(t *testing.T, admin sarama.ClusterAdmin) {
	t.Helper()
	for _, m := range []sarama.ScramMechanismType{sarama.SCRAM_MECHANISM_SHA_256, sarama.SCRAM_MECHANISM_SHA_512} {
		salt := make([]byte, 16)
		rand.Read(salt)
		if _, err := admin.UpsertUserScramCredentials([]sarama.AlterUserScramCredentialsUpsert{{Name: "bob", Mechanism: m, Iterations: 4096, Salt: salt, Password: []byte("bob-secret")}}); err != nil {
			t.Fatalf("upsert SCRAM %v: %v", m, err)
		}
	}
}

// saslRoundTrip creates and lists a topic with a ClusterAdmin, produces
// with WaitForAll and consumes the record, all on one client of cfg (SASL
// on, set by c) to addr.
func saslRoundTrip(t *testing.T, b *brook, addr string, cfg *sarama.Config, c saramaSASLCase) {
	t.Helper()
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	c.set(cfg)
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	topic := "sarama-sasl-" + strings.ToLower(c.name)
	if cfg.Net.TLS.Enable {
		topic += "-ssl"
	}
	cl, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("client over %s: %v", c.name, err)
	}
	defer cl.Close()
	adm, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	topics, err := adm.ListTopics()
	if _, ok := topics[topic]; err != nil || !ok {
		t.Fatalf("list topics: %v %v", err, topics)
	}
	p, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("v-" + c.name)}); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	select {
	case m := <-pc.Messages():
		if string(m.Value) != "v-"+c.name {
			t.Fatalf("read %q", m.Value)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no record read\n%s", b.logTail())
	}
}

// TestSaramaSASL produces, consumes and lists topics with sarama over
// SASL_PLAINTEXT with each mechanism, PLAIN also with SaslHandshake v0
// (raw tokens), SCRAM users created with sarama's ClusterAdmin.
func TestSaramaSASL(t *testing.T) {
	saslPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	saslAddr := fmt.Sprintf("127.0.0.1:%d", saslPort)
	b := startBrookWith(t, func(addr string) []string {
		return []string{
			"listeners=PLAINTEXT://" + addr + ",SASL_PLAINTEXT://" + saslAddr,
			"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainJAAS,
		}
	})
	version := sarama.V2_8_0_0
	upsertScramUser(t, newAdmin(t, b.addr, version))
	for _, c := range saramaSASLCases {
		t.Run(c.name, func(t *testing.T) { saslRoundTrip(t, b, saslAddr, newConfig(t, version), c) })
	}
	t.Run("wrong password", func(t *testing.T) {
		cfg := newConfig(t, version)
		cfg.Net.SASL.Enable, cfg.Net.SASL.Version = true, sarama.SASLHandshakeV1
		cfg.Net.SASL.Mechanism, cfg.Net.SASL.User, cfg.Net.SASL.Password = sarama.SASLTypePlaintext, "alice", "wrong"
		cfg.Metadata.Retry.Max = 0
		cl, err := sarama.NewClient([]string{saslAddr}, cfg)
		if err == nil {
			cl.Close()
			t.Fatal("client with a wrong password connected")
		}
	})
}
