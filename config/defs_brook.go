package config

// brookDefs lists Brook's own broker configs, which Kafka does not have;
// their names start with "brook." so that they never collide with one of
// Kafka's. They are static (read-only dynamically).
func brookDefs() []Def {
	note := brook("Brook's own config; Kafka has none of this name.")
	return []Def{
		b("brook.metrics.listener", String, null, Medium,
			"HOST:PORT of an HTTP listener serving Prometheus metrics at /metrics, under the names the Prometheus JMX exporter gives Kafka's MBeans (docs/metrics.md). Unset, there is no such listener; port 0 picks a free port.",
			note),
		b("brook.metrics.pprof.enable", Boolean, "false", Low,
			"Serve Go's pprof profiles under /debug/pprof/ on the metrics listener. Profiles show the broker's internals to anyone who can reach the listener.",
			note),
		b("brook.log.format", String, "text", Medium,
			"The format of the broker's log lines on standard error: text (key=value pairs) or json (one JSON object a line).",
			valid(oneOf("text", "json")), note),
		b("brook.log.open.files.max", Int, "0", Medium,
			"The most segment file descriptors the broker keeps open for idle partitions. Past it, the least recently used idle .log descriptors are closed and reopened on the next read, write or fsync, so the descriptors a broker holds stay bounded whatever its partition count (Kafka keeps one open per segment file and mmaps its indexes, and fails with too many open files at scale). Descriptors in use (an append, a sendfile) are never closed. 0 means a quarter of the process's descriptor limit (RLIMIT_NOFILE), e.g. 5,000 under a limit of 20,000.",
			valid(atLeast(0)), note),
	}
}
