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
#   BROOK_NO_CDS       set to run without class data sharing archives
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

# Class data sharing: the first run of a main class from a release records
# the classes it loaded into an archive (-XX:ArchiveClassesAtExit) and later
# runs map it (-XX:SharedArchiveFile), which roughly halves a tool's start-up
# CPU; the suites start hundreds of tools. The writer is whoever wins the
# mkdir of the lock; its PID (kept through exec) is in the lock, and once it
# has exited a later run renames its archive into place, so a reader never
# sees a half-written file, and a writer killed before exit writes nothing.
# The JVM ignores an archive of another JDK or class path; its warnings go to
# stderr so that a tool's stdout stays the tool's.
cds=()
cds_dir="$cache/cds"
if [[ -z ${BROOK_NO_CDS:-} ]] && mkdir -p "$cds_dir" 2>/dev/null; then
  archive="$cds_dir/$(basename "$(readlink -f "$home")")-$main.jsa"
  lock="$archive.lock"
  if [[ ! -f $archive && -d $lock ]]; then
    writer=$(cat "$lock/pid" 2>/dev/null || true)
    if [[ -n $writer ]] && ! kill -0 "$writer" 2>/dev/null; then
      if [[ -s $archive.tmp ]]; then mv -f "$archive.tmp" "$archive" 2>/dev/null || true; fi
      rm -rf "$lock"
    fi
  fi
  if [[ -f $archive ]]; then
    cds=(-XX:SharedArchiveFile="$archive")
  elif mkdir "$lock" 2>/dev/null; then
    echo $$ >"$lock/pid"
    cds=(-XX:ArchiveClassesAtExit="$archive.tmp")
  fi
fi

# Word splitting of the *_OPTS variables is intended, as in Kafka's script.
# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Xlog:disable -Xlog:all=warning:stderr "${cds[@]}" \
  -Djava.awt.headless=true \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${BROOK_TOOL_LOG_LEVEL:-warn}" \
  -Dorg.slf4j.simpleLogger.logFile=System.err \
  ${KAFKA_OPTS:-} \
  -cp "$home/libs/*" "$main" "$@"
