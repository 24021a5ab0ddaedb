package config

// securityDefs lists the TLS and SASL broker configs of Kafka 3.9 that
// Kafka updates dynamically (DynamicListenerConfig and
// SslConfigs.RECONFIGURABLE_CONFIGS) or reads per SASL mechanism, with
// Kafka's types and defaults. The SASL configs that choose mechanisms and
// credentials are real (per listener, see SASLFor); the Kerberos and login
// refresh ones are accepted so that configs and kafka-configs invocations
// written for Kafka work unchanged.
func securityDefs() []Def {
	noJVM := unused("it configures the JVM's TLS implementation; Brook uses Go's crypto/tls.")
	noSASL := unused("Brook does not implement GSSAPI (Kerberos) or OAUTHBEARER login refresh; the broker's own OAUTHBEARER login is not used.")
	atStart := brook("Read when the broker starts; a dynamic update takes effect at the next start.")
	// Read once at startup, per listener: changing them needs a restart.
	saslReal := brook("Read at startup, also per listener (listener.name.<listener>.<config>); a dynamic change applies after a restart.")
	// Kafka updates these only per listener (listener.name.<l>.<name>);
	// the plain name is refused dynamically.
	tlsStore := []opt{update(PerBroker), listenerOnly(), atStart}
	tls := []opt{update(PerBroker), atStart}
	jvm := []opt{update(PerBroker), noJVM}
	sasl := []opt{update(PerBroker), noSASL}
	with := func(v validator, o []opt) []opt { return append([]opt{valid(v)}, o...) }
	return []Def{
		b("principal.builder.class", Class, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", Medium,
			"The class that builds the KafkaPrincipal of a connection for authorization.",
			update(PerBroker), unused("Brook builds principals as Kafka's default builder does (User:<SASL name>, else User:ANONYMOUS); no other class is loaded.")),
		b("connections.max.reauth.ms", Long, "0", Medium,
			"The longest a SASL session may last before the client must re-authenticate (KIP-368); 0 means never.",
			brook("Per listener and mechanism too (listener.name.<listener>.<mechanism>.connections.max.reauth.ms); read at startup.")),

		// TLS.
		b("ssl.protocol", String, "TLSv1.3", Medium, "The TLS protocol used to build the SSLContext.", jvm...),
		b("ssl.provider", String, null, Medium, "The security provider of TLS connections; unset, the JVM's default.", jvm...),
		b("ssl.cipher.suites", List, "", Medium, "The TLS cipher suites allowed, by their IANA names; empty allows all the provider supports. Go always allows its TLS 1.3 suites.", tls...),
		b("ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", Medium, "The TLS protocols enabled for connections.", tls...),
		b("ssl.keystore.type", String, "JKS", Medium, "The file format of the key store.", tlsStore...),
		b("ssl.keystore.location", String, null, Medium, "The path of the key store file.", tlsStore...),
		b("ssl.keystore.password", Password, null, Medium, "The password of the key store file.", tlsStore...),
		b("ssl.key.password", Password, null, Medium, "The password of the private key in the key store.", tlsStore...),
		b("ssl.keystore.key", Password, null, Medium, "The private key in PEM format, instead of a key store file.", tlsStore...),
		b("ssl.keystore.certificate.chain", Password, null, Medium, "The certificate chain in PEM format, instead of a key store file.", tlsStore...),
		b("ssl.truststore.type", String, "JKS", Medium, "The file format of the trust store.", tlsStore...),
		b("ssl.truststore.location", String, null, Medium, "The path of the trust store file.", tlsStore...),
		b("ssl.truststore.password", Password, null, Medium, "The password of the trust store file.", tlsStore...),
		b("ssl.truststore.certificates", Password, null, Medium, "Trusted certificates in PEM format, instead of a trust store file.", tlsStore...),
		b("ssl.keymanager.algorithm", String, "SunX509", Medium, "The key manager factory algorithm of TLS connections.", jvm...),
		b("ssl.trustmanager.algorithm", String, "PKIX", Medium, "The trust manager factory algorithm of TLS connections.", jvm...),
		b("ssl.endpoint.identification.algorithm", String, "https", Low, "How the broker checks the host name of a server certificate; empty turns the check off.", tls...),
		b("ssl.secure.random.implementation", String, null, Low, "The SecureRandom implementation of TLS.", jvm...),
		b("ssl.client.auth", String, "none", Medium, "Whether the broker asks for client certificates: required, requested or none.",
			with(oneOf("required", "requested", "none"), tls)...),
		b("ssl.principal.mapping.rules", String, "DEFAULT", Low,
			"Rules that map the distinguished name of a client certificate to a user name: RULE:pattern/replacement/[LU] or DEFAULT (the name itself), separated by commas. Patterns are Go regular expressions (RE2): no look-around or back references."),
		b("ssl.engine.factory.class", Class, null, Low, "A class that makes the SSLEngine objects instead of Kafka's default.", jvm...),

		// SASL.
		b("sasl.mechanism.inter.broker.protocol", String, "GSSAPI", Medium, "The SASL mechanism brokers use with each other.",
			update(PerBroker), brook("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER; the broker authenticates with the username and password (OAUTHBEARER: unsecuredLoginStringClaim_sub) of the inter-broker listener's JAAS config for it. Read at startup.")),
		b("sasl.enabled.mechanisms", List, "GSSAPI", Medium, "The SASL mechanisms the broker accepts.",
			update(PerBroker), brook("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are implemented; a SASL listener enabling GSSAPI (the default) is refused at startup. "+
				"Per listener as listener.name.<listener>.sasl.enabled.mechanisms.")),
		b("sasl.jaas.config", Password, null, Medium, "The JAAS login context of SASL connections, in the JAAS configuration file format.",
			update(PerBroker), saslReal),
		b("sasl.kerberos.service.name", String, null, Medium, "The Kerberos principal name Kafka runs as.", sasl...),
		b("sasl.kerberos.kinit.cmd", String, "/usr/bin/kinit", Medium, "The kinit command path.", sasl...),
		b("sasl.kerberos.ticket.renew.window.factor", Double, "0.8", Medium, "The share of a Kerberos ticket's lifetime after which the login thread renews it.", sasl...),
		b("sasl.kerberos.ticket.renew.jitter", Double, "0.05", Medium, "The share of random jitter added to the Kerberos renewal time.", sasl...),
		b("sasl.kerberos.min.time.before.relogin", Long, "60000", Medium, "The least time, in milliseconds, between two Kerberos refresh attempts.", sasl...),
		b("sasl.kerberos.principal.to.local.rules", List, "DEFAULT", Medium, "Rules that map Kerberos principal names to short names.", sasl...),
		b("sasl.login.refresh.window.factor", Double, "0.8", Medium, "The share of a login credential's lifetime after which it is refreshed (OAUTHBEARER).", sasl...),
		b("sasl.login.refresh.window.jitter", Double, "0.05", Medium, "The share of random jitter added to the credential refresh time (OAUTHBEARER).", sasl...),
		b("sasl.login.refresh.min.period.seconds", Short, "60", Medium, "The least time, in seconds, between two credential refreshes (OAUTHBEARER).", sasl...),
		b("sasl.login.refresh.buffer.seconds", Short, "300", Medium, "How long, in seconds, before a credential expires it is refreshed (OAUTHBEARER).", sasl...),
		b("sasl.login.class", Class, null, Medium, "The Login class of SASL connections.", noSASL),
		b("sasl.login.callback.handler.class", Class, null, Medium, "The callback handler class of SASL logins.", noSASL),
		b("sasl.server.callback.handler.class", Class, null, Medium, "The callback handler class of the SASL server.", noSASL),
	}
}
