package auth

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/brook-mq/brook/config"
)

// Key and trust stores are read as Kafka's DefaultSslEngineFactory reads
// them: ssl.keystore.type and ssl.truststore.type JKS, PKCS12 or PEM; PEM
// either from a file (ssl.*.location) or inline (ssl.keystore.key with
// ssl.keystore.certificate.chain, ssl.truststore.certificates).

// loadKeyStore returns the broker's certificate, or nil when no key store
// is configured.
func loadKeyStore(c config.TLS) (*tls.Certificate, error) {
	typ := strings.ToUpper(c.KeystoreType)
	if c.KeystoreKey != "" || c.KeystoreCertificateChain != "" {
		if typ != "PEM" {
			return nil, fmt.Errorf("SSL private key can be specified only for PEM, but key store type is %s", c.KeystoreType)
		}
		if c.KeystoreKey == "" || c.KeystoreCertificateChain == "" {
			return nil, errors.New("both ssl.keystore.key and ssl.keystore.certificate.chain must be set for a PEM key store")
		}
		if c.KeystoreLocation != "" {
			return nil, errors.New("SSL key store location cannot be specified with PEM key and certificate chain configs")
		}
		return pemKeyStore([]byte(c.KeystoreCertificateChain+"\n"+c.KeystoreKey), c.KeyPassword)
	}
	if c.KeystoreLocation == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.KeystoreLocation)
	if err != nil {
		return nil, fmt.Errorf("read key store: %w", err)
	}
	keyPassword := c.KeyPassword
	if keyPassword == "" {
		// Kafka: the key password defaults to the store's.
		keyPassword = c.KeystorePassword
	}
	switch typ {
	case "PEM":
		if c.KeystorePassword != "" {
			return nil, errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified")
		}
		return pemKeyStore(data, c.KeyPassword)
	case "PKCS12":
		key, leaf, cas, err := pkcs12.DecodeChain(data, c.KeystorePassword)
		if err != nil {
			return nil, fmt.Errorf("load PKCS12 key store %s: %w", c.KeystoreLocation, err)
		}
		return certificate(key, append([]*x509.Certificate{leaf}, cas...))
	case "JKS":
		ks := keystore.New(keystore.WithOrderedAliases())
		if err := ks.Load(bytes.NewReader(data), []byte(c.KeystorePassword)); err != nil {
			return nil, fmt.Errorf("load JKS key store %s: %w", c.KeystoreLocation, err)
		}
		for _, alias := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
			if err != nil {
				return nil, fmt.Errorf("JKS key store %s, key %s: %w", c.KeystoreLocation, alias, err)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				return nil, fmt.Errorf("JKS key store %s, key %s: %w", c.KeystoreLocation, alias, err)
			}
			var chain []*x509.Certificate
			for _, cc := range e.CertificateChain {
				cert, err := x509.ParseCertificate(cc.Content)
				if err != nil {
					return nil, fmt.Errorf("JKS key store %s, certificate of %s: %w", c.KeystoreLocation, alias, err)
				}
				chain = append(chain, cert)
			}
			return certificate(key, chain)
		}
		return nil, fmt.Errorf("JKS key store %s holds no private key", c.KeystoreLocation)
	}
	return nil, fmt.Errorf("unsupported key store type %s", c.KeystoreType)
}

// loadTrustStore returns the trusted certificates, or nil when no trust
// store is configured (the system's roots then apply, as the JVM's
// default trust store does for Kafka).
func loadTrustStore(c config.TLS) (*x509.CertPool, error) {
	typ := strings.ToUpper(c.TruststoreType)
	var data []byte
	switch {
	case c.TruststoreCertificates != "":
		if typ != "PEM" {
			return nil, fmt.Errorf("SSL trust store certs can be specified only for PEM, but trust store type is %s", c.TruststoreType)
		}
		if c.TruststoreLocation != "" {
			return nil, errors.New("SSL trust store location cannot be specified with PEM trust store certificates")
		}
		data = []byte(c.TruststoreCertificates)
	case c.TruststoreLocation != "":
		var err error
		if data, err = os.ReadFile(c.TruststoreLocation); err != nil {
			return nil, fmt.Errorf("read trust store: %w", err)
		}
	default:
		return nil, nil
	}
	var certs []*x509.Certificate
	switch typ {
	case "PEM":
		if c.TruststorePassword != "" {
			return nil, errors.New("SSL trust store password cannot be specified for PEM format")
		}
		var err error
		if certs, err = pemCertificates(data); err != nil {
			return nil, fmt.Errorf("PEM trust store: %w", err)
		}
	case "PKCS12":
		var err error
		if certs, err = pkcs12.DecodeTrustStore(data, c.TruststorePassword); err != nil {
			return nil, fmt.Errorf("load PKCS12 trust store %s: %w", c.TruststoreLocation, err)
		}
	case "JKS":
		if c.TruststorePassword == "" {
			// Kafka then reads the store without checking its integrity;
			// the JKS library always checks it.
			return nil, errors.New("a JKS trust store needs ssl.truststore.password")
		}
		ks := keystore.New(keystore.WithOrderedAliases())
		if err := ks.Load(bytes.NewReader(data), []byte(c.TruststorePassword)); err != nil {
			return nil, fmt.Errorf("load JKS trust store %s: %w", c.TruststoreLocation, err)
		}
		for _, alias := range ks.Aliases() {
			var der []byte
			switch {
			case ks.IsTrustedCertificateEntry(alias):
				e, err := ks.GetTrustedCertificateEntry(alias)
				if err != nil {
					return nil, fmt.Errorf("JKS trust store %s, entry %s: %w", c.TruststoreLocation, alias, err)
				}
				der = e.Certificate.Content
			case ks.IsPrivateKeyEntry(alias):
				// Java's trust manager trusts the first certificate of a
				// key entry too.
				chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
				if err != nil || len(chain) == 0 {
					continue
				}
				der = chain[0].Content
			default:
				continue
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, fmt.Errorf("JKS trust store %s, entry %s: %w", c.TruststoreLocation, alias, err)
			}
			certs = append(certs, cert)
		}
	default:
		return nil, fmt.Errorf("unsupported trust store type %s", c.TruststoreType)
	}
	if len(certs) == 0 {
		return nil, errors.New("the trust store holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool, nil
}

// pemKeyStore reads a PKCS#8 private key (encrypted when keyPassword is
// set, as Kafka requires) and its certificate chain from PEM blocks.
func pemKeyStore(data []byte, keyPassword string) (*tls.Certificate, error) {
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	for rest := data; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		switch blk.Type {
		case "CERTIFICATE":
			cert, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("PEM key store certificate: %w", err)
			}
			chain = append(chain, cert)
		case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			if key != nil {
				return nil, errors.New("PEM key store holds more than one private key")
			}
			k, err := pemPrivateKey(blk, keyPassword)
			if err != nil {
				return nil, err
			}
			key = k
		default:
			return nil, fmt.Errorf("PEM key store: unsupported block %q; the key must be PKCS#8 (PRIVATE KEY or ENCRYPTED PRIVATE KEY)", blk.Type)
		}
	}
	if key == nil {
		return nil, errors.New("PEM key store holds no private key")
	}
	return certificate(key, chain)
}

func pemPrivateKey(blk *pem.Block, password string) (crypto.PrivateKey, error) {
	encrypted := blk.Type == "ENCRYPTED PRIVATE KEY"
	switch {
	case encrypted && password == "":
		return nil, errors.New("PEM private key is encrypted but ssl.key.password is not set")
	case !encrypted && password != "":
		return nil, errors.New("ssl.key.password is set but the PEM private key is not encrypted")
	case encrypted:
		k, err := pkcs8.ParsePKCS8PrivateKey(blk.Bytes, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("decrypt PEM private key: %w", err)
		}
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("PEM private key: %w", err)
	}
	return k, nil
}

func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return out, nil
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		out = append(out, cert)
	}
}

// certificate pairs a key with its chain, checking that the first
// certificate is the key's.
func certificate(key crypto.PrivateKey, chain []*x509.Certificate) (*tls.Certificate, error) {
	if len(chain) == 0 || chain[0] == nil {
		return nil, errors.New("key store holds no certificate for its private key")
	}
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	if eq, ok := chain[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(pub.Public()) {
		return nil, errors.New("the key store's certificate does not match its private key")
	}
	tc := &tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		tc.Certificate = append(tc.Certificate, c.Raw)
	}
	return tc, nil
}
