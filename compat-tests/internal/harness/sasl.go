package harness

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/internal/testutil"
)

// The SASL scenarios' credentials: PLAIN users come from the listener's
// JAAS config, SCRAM users are created with AlterUserScramCredentials
// (CreateScramUsers), OAUTHBEARER takes any unsecured token (Kafka's
// default validator).
const (
	PlainUser, PlainPassword = "alice", "alice-secret"
	ScramUser, ScramPassword = "bob", "bob-secret"
	OAuthUser                = "dave"
	// PlainJAAS is the broker's JAAS line for PLAIN, as Kafka's docs write it.
	PlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
)

// SASLMechanisms are the mechanisms the SASL scenarios run.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// SASLFull reports whether the long SASL variants run (make compat-sasl,
// BROOK_SASL_FULL=1): every mechanism with each Java tool and every
// release. make test runs one mechanism with the Java tools and Kafka
// 4.x's kafka-configs, to stay within its time budget.
func SASLFull() bool { return os.Getenv("BROOK_SASL_FULL") == "1" }

// JavaToolMechanisms are the mechanisms the Java tool scenarios run.
func JavaToolMechanisms() []string {
	if SASLFull() {
		return SASLMechanisms
	}
	return []string{"SCRAM-SHA-256"}
}

// SASLEnv is a broker with a PLAINTEXT listener (Addr, for setup) and a
// SASL_PLAINTEXT one (SASLAddr) enabling every mechanism.
type SASLEnv struct {
	*Env
	SASLAddr string
}

// StartSASL starts a broker with a SASL_PLAINTEXT listener next to the
// PLAINTEXT one and creates the SCRAM user for both SCRAM mechanisms.
func StartSASL(t *testing.T, bin string, overrides map[string]string) *SASLEnv {
	t.Helper()
	props, saslAddr := saslOverrides(t, overrides)
	env := &SASLEnv{Env: Start(t, bin, props), SASLAddr: saslAddr}
	CreateScramUsers(t, env.Addr())
	return env
}

// ForEachReleaseSASL is ForEachRelease with StartSASL's broker; without
// SASLFull, Kafka 4.x's tools only.
func ForEachReleaseSASL(t *testing.T, bin string, overrides map[string]string, scenario func(t *testing.T, env *SASLEnv)) {
	t.Helper()
	releases := Releases()
	if !SASLFull() {
		releases = releases[:1]
	}
	for _, r := range releases {
		t.Run(r.Name(), func(t *testing.T) {
			r.use(t)
			env := StartSASL(t, bin, overrides)
			env.Release = r
			scenario(t, env)
		})
	}
}

// saslOverrides are the broker settings of StartSASL, on fresh ports.
func saslOverrides(t *testing.T, overrides map[string]string) (map[string]string, string) {
	plainPort, saslPort := testutil.FreePort(t), testutil.FreePort(t)
	props := saslProps("sasl_plaintext")
	props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plainPort, saslPort)
	maps.Copy(props, overrides)
	return props, fmt.Sprintf("127.0.0.1:%d", saslPort)
}

// saslProps enable every mechanism, with PLAIN's users in the JAAS config
// of listener (its lower-case name).
func saslProps(listener string) map[string]string {
	return map[string]string{
		"sasl.enabled.mechanisms":                               "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name." + listener + ".plain.sasl.jaas.config": PlainJAAS,
	}
}

// CreateScramUsers gives ScramUser a SCRAM-SHA-256 and a SCRAM-SHA-512
// credential through addr.
func CreateScramUsers(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(testutil.Client(t, addr))
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: ScramUser, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: ScramPassword},
		{User: ScramUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: ScramPassword},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("create SCRAM user %s: %v", ScramUser, err)
	}
}

// UserFor is the principal name a mechanism's scenario authenticates as.
func UserFor(mechanism string) string {
	switch mechanism {
	case "PLAIN":
		return PlainUser
	case "OAUTHBEARER":
		return OAuthUser
	}
	return ScramUser
}

// PasswordFor is the password of UserFor (none for OAUTHBEARER).
func PasswordFor(mechanism string) string {
	if mechanism == "PLAIN" {
		return PlainPassword
	}
	return ScramPassword
}

// JavaClientProperties are a Java client's settings (a --command-config
// or --producer.config file) for mechanism against the SASL listener.
func JavaClientProperties(mechanism string) string {
	return "security.protocol=SASL_PLAINTEXT\n" + javaSASLProperties(mechanism)
}

// javaSASLProperties are a Java client's sasl.mechanism and JAAS login for
// mechanism, whatever the security protocol.
func javaSASLProperties(mechanism string) string {
	p := "sasl.mechanism=" + mechanism + "\n"
	switch mechanism {
	case "PLAIN":
		p += `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="` + PlainUser + `" password="` + PlainPassword + `";` + "\n"
	case "OAUTHBEARER":
		// Kafka's unsecured login: an unsigned token for the subject.
		p += `sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="` + OAuthUser + `";` + "\n"
	default:
		p += `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + ScramUser + `" password="` + ScramPassword + `";` + "\n"
	}
	return p
}

// UnsecuredJWT is the unsigned token (alg none) of Kafka's unsecured
// OAUTHBEARER login for subject, valid for an hour: what Brook's default
// validator takes.
func UnsecuredJWT(subject string) string {
	claims, _ := json.Marshal(map[string]any{"sub": subject, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "."
}
