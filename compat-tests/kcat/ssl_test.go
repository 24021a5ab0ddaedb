package kcat

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestKcatSSL: librdkafka with a client certificate on an SSL listener
// that requires one, its host name checked (librdkafka's default
// ssl.endpoint.identification.algorithm=https): metadata, produce and
// consume; without the certificate it is refused.
func TestKcatSSL(t *testing.T) {
	env := harness.StartTLS(t, brookBin, nil)
	const topic = "compat-kcat-ssl"
	createTopic(t, kadm.NewClient(testutil.Client(t, env.Addr())), topic, 1)
	ssl := env.KcatArgs()

	out, errOut := env.Kcat(nil, append(ssl, "-L", "-t", topic)...)
	if want := "broker 0 at " + env.SSLAddr; !strings.Contains(out, want) {
		env.Errorf(out, errOut, "kcat -L over SSL: output lacks %q", want)
	}
	env.Kcat(strings.NewReader("k1:over tls\nk2:second\n"), append(ssl, "-P", "-t", topic, "-K:", "-X", "acks=all")...)
	out, errOut = env.Kcat(nil, append(ssl, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s\n")...)
	if want := "k1=over tls\nk2=second\n"; out != want {
		env.Errorf(out, errOut, "kcat -C over SSL: %q, want %q", out, want)
	}

	// No client certificate: the handshake fails and kcat gives up.
	out, errOut, err := testutil.Kcat(t, nil, "-b", env.SSLAddr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location="+env.CAFile,
		"-L", "-m", "2")
	if err == nil {
		env.Errorf(out, errOut, "kcat -L without a client certificate succeeded")
	}
}
