#!/usr/bin/env bash
# Runs an Apache Kafka tool's main class from the jars that scripts/deps.sh
# put in the cache, the way Kafka's own bin/kafka-run-class.sh would.
#
#   kafka-run-class.sh CLASS[,CANDIDATE...] [ARGS...]
#
# Several comma-separated class names may be given because tools moved
# between packages across releases (e.g. kafka.tools.ConsoleProducer in 3.x,
# org.apache.kafka.tools.ConsoleProducer in 4.x); the first one present in
# the release's jars is run.
#
# Environment:
#   BROOK_CACHE        cache root (default $HOME/.cache/brook)
#   BROOK_KAFKA_HOME   release dir with libs/ (default $BROOK_CACHE/kafka)
#   KAFKA_HEAP_OPTS    JVM heap flags (default -Xmx256m)
#   KAFKA_OPTS         extra JVM flags
#   BROOK_TOOL_LOG_LEVEL  slf4j-simple level for the tool's own logging (warn)
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 CLASS[,CANDIDATE...] [ARGS...]" >&2
  exit 2
fi
candidates=$1
shift

cache="${BROOK_CACHE:-$HOME/.cache/brook}"
home="${BROOK_KAFKA_HOME:-$cache/kafka}"
if [[ ! -f "$home/.complete" ]]; then
  echo "$0: no Kafka tool jars in $home; run scripts/deps.sh --kafka first" >&2
  exit 127
fi

main=""
IFS=',' read -r -a classes <<<"$candidates"
for class in "${classes[@]}"; do
  if grep -qxF "$class" "$home/classes.txt"; then
    main=$class
    break
  fi
done
if [[ -z $main ]]; then
  echo "$0: none of [$candidates] is in the jars of $home" >&2
  exit 127
fi

# Word splitting of the *_OPTS variables is intended, as in Kafka's script.
# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Djava.awt.headless=true \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${BROOK_TOOL_LOG_LEVEL:-warn}" \
  -Dorg.slf4j.simpleLogger.logFile=System.err \
  ${KAFKA_OPTS:-} \
  -cp "$home/libs/*" "$main" "$@"
