#!/usr/bin/env bash
# Same as Apache Kafka's bin/connect-distributed.sh WORKER.properties: a
# distributed Kafka Connect worker, run from the Connect jars that
# scripts/deps.sh --connect put in the cache (they include the FileStream
# connectors and the JSON converter, so no plugin.path is needed).
#
# Environment: as kafka-run-class.sh; BROOK_CONNECT_HOME overrides the
# release dir (default $BROOK_CACHE/connect).
set -euo pipefail
cache="${BROOK_CACHE:-$HOME/.cache/brook}"
export BROOK_KAFKA_HOME="${BROOK_CONNECT_HOME:-$cache/connect}"
if [[ ! -f "$BROOK_KAFKA_HOME/.complete" ]]; then
  echo "$0: no Kafka Connect jars in $BROOK_KAFKA_HOME; run scripts/deps.sh --connect first" >&2
  exit 127
fi
# A worker runs Jetty, the herder and every task: more than a tool's heap.
export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx512m}"
exec "$(dirname "$(readlink -f "$0")")/kafka-run-class.sh" org.apache.kafka.connect.cli.ConnectDistributed "$@"
