#!/usr/bin/env bash
# Runs one Apache Kafka 4.x broker in KRaft mode (broker and controller in
# one process) on loopback, from the jars scripts/deps.sh --kafka cached.
# Used by brook-bench --kafka-script to compare Brook with Kafka.
#
#   scripts/kafka-server.sh format PORT DIR [--controller-port N] [--sasl-ssl-port N] [--config FILE]
#   scripts/kafka-server.sh start  PORT DIR [--controller-port N] [--sasl-ssl-port N] [--config FILE]
#
# format writes DIR/server.properties and formats DIR/logs (a random
# cluster id, static single-voter quorum) unless it is formatted already,
# then exits. start does the same, then execs java, so the caller's PID
# is the broker's own and SIGTERM stops it cleanly. Clients connect to
# 127.0.0.1:PORT; the controller listens on --controller-port (default
# PORT+1). --sasl-ssl-port adds a SASL_SSL listener on 127.0.0.1:N, and
# --config FILE's properties are appended to server.properties (later
# keys win: brook-bench --security sasl_ssl puts its key store there).
#
# Environment:
#   KAFKA_HOME       jar dir parent (default ${BROOK_CACHE:-~/.cache/brook}/kafka)
#   KAFKA_HEAP_OPTS  default "-Xmx1G -Xms1G", as kafka-server-start.sh
#   JAVA             java binary (default: java on PATH)
set -euo pipefail

die() { printf 'kafka-server: ERROR: %s\n' "$*" >&2; exit 1; }

[[ $# -ge 3 ]] || { sed -n '2,19p' "$0" >&2; exit 2; }
cmd=$1 port=$2 dir=$3
shift 3
controller_port=$((port + 1))
sasl_ssl_port="" extra_config=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --controller-port) controller_port=$2; shift 2 ;;
    --sasl-ssl-port) sasl_ssl_port=$2; shift 2 ;;
    --config) extra_config=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
case "$cmd" in format|start) ;; *) die "command $cmd: want format or start" ;; esac
[[ $port =~ ^[0-9]+$ && $controller_port =~ ^[0-9]+$ && $sasl_ssl_port =~ ^[0-9]*$ ]] || die "ports must be numbers"
[[ -z $extra_config || -f $extra_config ]] || die "no config file $extra_config"
sasl_listener="" sasl_map=""
if [[ -n $sasl_ssl_port ]]; then
  sasl_listener=",SASL_SSL://127.0.0.1:$sasl_ssl_port" sasl_map=",SASL_SSL:SASL_SSL"
fi

kafka_home=${KAFKA_HOME:-${BROOK_CACHE:-$HOME/.cache/brook}/kafka}
[[ -d $kafka_home/libs ]] || die "no jars in $kafka_home/libs (run scripts/deps.sh --kafka)"
ls "$kafka_home"/libs/kafka_2.13-4.*.jar >/dev/null 2>&1 \
  || die "$kafka_home is not a Kafka 4.x release (KRaft-only broker needed)"
java=${JAVA:-java}
command -v "$java" >/dev/null || die "java not found"

mkdir -p "$dir/logs"
dir=$(cd "$dir" && pwd)
props=$dir/server.properties
# The broker settings of Kafka's config/server.properties for a single node,
# with replication factors of 1 for the internal topics.
cat >"$props" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port$sasl_listener
advertised.listeners=PLAINTEXT://127.0.0.1:$port$sasl_listener
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT$sasl_map
log.dirs=$dir/logs
num.partitions=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
EOF
[[ -z $extra_config ]] || cat "$extra_config" >>"$props"

classpath="$kafka_home/libs/*"
# JVM flags of kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
jvm_opts=(-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true)
read -r -a heap_opts <<<"${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}"

format() {
  local id
  # A cluster id is 16 random bytes in URL-safe base64 without padding.
  id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  # --cluster-id=ID, not -t ID: an id starting with "-" would read as a flag.
  "$java" -Xmx256M -cp "$classpath" kafka.tools.StorageTool format \
    "--cluster-id=$id" -c "$props" >"$dir/format.log" 2>&1 \
    || { tail -n 20 "$dir/format.log" >&2; die "kafka-storage format failed (log: $dir/format.log)"; }
}

# A formatted dir keeps its cluster id: formatting again would need the same
# id, so both commands leave it alone.
[[ -f $dir/logs/meta.properties ]] || format
[[ $cmd == format ]] && exit 0
exec "$java" "${heap_opts[@]}" "${jvm_opts[@]}" -cp "$classpath" kafka.Kafka "$props"
