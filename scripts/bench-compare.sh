#!/usr/bin/env bash
# Side-by-side benchmark of Brook and Apache Kafka on this machine with the
# same franz-go workload (cmd/brook-bench --compare). The servers run in
# alternating rounds (Brook, Kafka, Brook, ...), each alone and started
# fresh (new temp dir) every round; the table at the end holds the medians
# and the Brook/Kafka ratios.
#
#   scripts/bench-compare.sh [brook-bench flags...]
#
# Defaults: 2000000 records of 1 KiB (several seconds per phase), 12
# partitions, acks=1, then acks=all, then transactional produce (acks=all,
# a commit every 100 ms, read back read_committed; --acks txn runs that
# case alone), no compression, 3 repeats, each start
# warmed up with 200000 untimed records (the JVM's JIT; Brook gets the same),
# Kafka with KAFKA_HEAP_OPTS="-Xmx1G -Xms1G".
# Later flags win, e.g. --records 100000 --repeat 1 --compare brook.
# Then the TLS case: the same again over a SASL_SSL listener (SCRAM-SHA-512,
# one PKCS12 key store for both servers); BENCH_TLS=0 skips it.
# The whole output is also written to bin/bench-compare.txt.
set -euo pipefail

cd "$(dirname "$0")/.."

log() { printf 'bench-compare: %s\n' "$*" >&2; }

go build -o bin/brook ./cmd/brook
go build -o bin/brook-bench ./cmd/brook-bench
cache=${BROOK_CACHE:-$HOME/.cache/brook}
if ! ls "$cache"/kafka/libs/kafka_2.13-4.*.jar >/dev/null 2>&1; then
  log "no Kafka 4.x jars in $cache/kafka: running scripts/deps.sh --kafka"
  scripts/deps.sh --kafka
fi

out=bin/bench-compare.txt
{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/{print $2}') GiB; load before: $(uptime | sed 's/.*load average: //')"
  echo "go: $(go version | cut -d' ' -f3); java: $(java -version 2>&1 | head -1)"
  echo "brook: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  ./bin/brook-bench --compare brook,kafka --repeat 3 --timeout 2h --acks 1,all,txn --txn-interval 100ms --records 2000000 --warmup 200000 \
    --record-size 1024 --partitions 12 --compression none --kafka-script scripts/kafka-server.sh "$@"
  if [[ ${BENCH_TLS:-1} != 0 ]]; then
    echo "TLS case: --security sasl_ssl"
    ./bin/brook-bench --compare brook,kafka --repeat 3 --timeout 2h --acks 1,all --records 2000000 --warmup 200000 \
      --record-size 1024 --partitions 12 --compression none --kafka-script scripts/kafka-server.sh --security sasl_ssl "$@"
  fi
  echo "load after: $(uptime | sed 's/.*load average: //')"
} 2>&1 | tee "$out"
exit "${PIPESTATUS[0]}"
