#!/usr/bin/env bash
# Installs what Brook's build and tests need. Idempotent: a second run finds
# everything in place and downloads nothing.
#
#   scripts/deps.sh [--go] [--kcat] [--kafka] [--kafka-3.9] [--connect] [--streams] [--python] [--zookeeper] [--all]
#
# With no flag it does --all (Go modules, also those of the test modules
# under compat-tests, kcat, Kafka 4.x and 3.9 tool jars, Kafka Connect's
# jars, Kafka Streams, kafka-python's venv, ZooKeeper).
# Jars go to ${BROOK_CACHE:-$HOME/.cache/brook}, outside the repo:
#   kafka-<version>/libs/*.jar   Apache Kafka's command-line tools + deps
#   kafka -> kafka-<version>     the 4.x release the compat wrappers use
#   kafka3 -> kafka-3.9.<n>      the 3.9 release (compat-tests/kafkatools)
#   connect-<version>/libs/      Kafka Connect's runtime, file connectors, JSON
#   connect -> connect-<version> converter (compat-tests/connect)
#   streams-<version>/libs/      kafka-streams + deps (compat-tests/streams)
#   streams -> streams-<version> same Kafka release as kafka
#   venv/                        Python venv with kafka-python 2.x and codecs
#   zookeeper-<version>/libs/    ZooKeeper server + deps (cluster tests)
#   zookeeper -> zookeeper-<version>
#   m2/                          Maven's local repository for these downloads
set -euo pipefail

cd "$(dirname "$0")/.."

CACHE="${BROOK_CACHE:-$HOME/.cache/brook}"
# Newest first; the first one Maven Central serves with all its deps wins.
KAFKA_VERSIONS=(4.4.0 4.3.1)
KAFKA3_VERSIONS=(3.9.2 3.9.1)
ZOOKEEPER_VERSIONS=(3.9.5 3.8.6)
SLF4J_VERSION=2.0.17
ZK_METRICS_VERSION=4.1.12.1
ZK_SNAPPY_VERSION=1.1.10.5
# kafka-python's newest 2.x, and the codec packages it uses for lz4, snappy
# and zstd (gzip is in Python's standard library).
PYTHON_PACKAGES=("kafka-python>=2,<3" lz4 python-snappy zstandard)
# Go test modules of their own (they keep their client out of Brook's go.mod).
GO_TEST_MODULES=(compat-tests/sarama)

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: ERROR: %s\n' "$*" >&2; exit 1; }

want_go=0 want_kcat=0 want_kafka=0 want_kafka3=0 want_connect=0 want_streams=0 want_python=0 want_zk=0
if [[ $# -eq 0 ]]; then set -- --all; fi
for arg in "$@"; do
  case "$arg" in
    --go) want_go=1 ;;
    --kcat) want_kcat=1 ;;
    --kafka) want_kafka=1 ;;
    --kafka-3.9) want_kafka3=1 ;;
    --connect) want_connect=1 ;;
    --streams) want_streams=1 ;;
    --python) want_python=1 ;;
    --zookeeper) want_zk=1 ;;
    --all) want_go=1 want_kcat=1 want_kafka=1 want_kafka3=1 want_connect=1 want_streams=1 want_python=1 want_zk=1 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) die "unknown flag $arg (see --help)" ;;
  esac
done

install_go() {
  command -v go >/dev/null || die "go not found on PATH (Go 1.26 is required)"
  # Reads the module cache first; only missing modules are fetched.
  go mod download || die "go mod download failed"
  local m
  for m in "${GO_TEST_MODULES[@]}"; do
    (cd "$m" && go mod download) || die "go mod download in $m failed"
  done
  log "go modules: ready"
}

install_kcat() {
  if command -v kcat >/dev/null; then
    log "kcat: $(command -v kcat) already installed"
    return
  fi
  # Debian ships librdkafka's CLI as package "kcat" (kafkacat was its old name).
  if ! command -v apt-get >/dev/null; then
    die "kcat is missing and apt-get is not available: install kcat by hand"
  fi
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  log "kcat: installing the Debian package"
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq kcat >/dev/null \
    || die "apt-get install kcat failed"
  command -v kcat >/dev/null || die "kcat still not on PATH after install"
  log "kcat: installed $(command -v kcat)"
}

# fetch_jars NAME VERSION DEST DEPENDENCY_XML...
# Resolves the given artifacts and their runtime dependencies with Maven and
# copies the jars to DEST/libs. Writes DEST/.complete last, so an interrupted
# run is redone and a finished one is skipped.
fetch_jars() {
  local name=$1 version=$2 dest=$3
  shift 3
  command -v mvn >/dev/null || die "mvn not found on PATH (Maven is needed to fetch $name jars)"
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  {
    cat <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>brook.deps</groupId>
  <artifactId>$name-jars</artifactId>
  <version>$version</version>
  <packaging>pom</packaging>
  <dependencies>
POM
    printf '%s\n' "$@"
    cat <<POM
  </dependencies>
</project>
POM
  } >"$tmp/pom.xml"
  rm -rf "$dest.partial"
  mkdir -p "$dest.partial/libs"
  if ! mvn -B -q -f "$tmp/pom.xml" -Dmaven.repo.local="$CACHE/m2" \
      dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$dest.partial/libs" >"$tmp/mvn.log" 2>&1; then
    tail -n 20 "$tmp/mvn.log" >&2
    rm -rf "$dest.partial"
    return 1
  fi
  # The wrappers pick a tool's main class by looking it up in this list,
  # since classes moved between packages across Kafka releases.
  local jar
  for jar in "$dest.partial"/libs/kafka*.jar "$dest.partial"/libs/connect*.jar "$dest.partial"/libs/zookeeper*.jar; do
    [[ -f $jar ]] || continue
    list_jar "$jar" | grep '\.class$' | grep -v '\$' | sed 's/\.class$//; s#/#.#g'
  done | sort -u >"$dest.partial/classes.txt"
  date -u +%FT%TZ >"$dest.partial/.complete"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
}

# list_jar JAR: entry names; unzip is faster, the JDK's jar is always there.
list_jar() {
  if command -v unzip >/dev/null; then unzip -Z1 "$1"; else jar tf "$1"; fi
}

dep() { # group artifact version
  printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' "$1" "$2" "$3"
}

# kafka_deps VERSION: the artifacts that hold the command-line tools' classes.
# kafka_2.13 still carries Scala-side tools (e.g. DumpLogSegments in older
# releases); kafka-tools holds the rest; slf4j-simple makes them log to stderr.
kafka_deps() {
  dep org.apache.kafka kafka-clients "$1"
  dep org.apache.kafka kafka-tools "$1"
  dep org.apache.kafka kafka_2.13 "$1"
  # Kafka pulls slf4j-api 1.7, which cannot see a 2.x binding: pin the API.
  dep org.slf4j slf4j-api "$SLF4J_VERSION"
  dep org.slf4j slf4j-simple "$SLF4J_VERSION"
}

# connect_deps VERSION: a distributed Connect worker (ConnectDistributed is in
# connect-runtime) with the FileStream connectors and the JSON converter,
# all of one release: Maven finds no connect-file 4.4.0 (connect-runtime
# 4.4.0 resolves), so this resolves to 4.3.1; a 4.4.0 worker with the 4.3.1
# connect-file jar fails to load its connectors ("Failed to get plugin
# version"), so the releases are not mixed.
connect_deps() {
  dep org.apache.kafka connect-runtime "$1"
  dep org.apache.kafka connect-api "$1"
  dep org.apache.kafka connect-json "$1"
  dep org.apache.kafka connect-file "$1"
  dep org.slf4j slf4j-api "$SLF4J_VERSION"
  dep org.slf4j slf4j-simple "$SLF4J_VERSION"
}

# install_release KIND LINK VERSIONS...: first version that resolves wins;
# LINK (kafka, zookeeper, kafka3) points at it.
install_release() {
  local kind=$1 link=$2
  shift 2
  local v dest
  mkdir -p "$CACHE"
  for v in "$@"; do
    dest="$CACHE/$kind-$v"
    if [[ -f "$dest/.complete" ]]; then
      log "$kind $v: cached in $dest"
      ln -sfn "$kind-$v" "$CACHE/$link"
      return 0
    fi
  done
  for v in "$@"; do
    dest="$CACHE/$kind-$v"
    log "$kind $v: resolving jars with Maven (first run takes a few minutes)"
    local deps
    case "$kind" in
      kafka) deps=$(kafka_deps "$v") ;;
      connect) deps=$(connect_deps "$v") ;;
      # The Streams test app compiles against these with javac; slf4j-simple
      # makes its logs land on stderr, where the Go test collects them.
      streams) deps=$(dep org.apache.kafka kafka-streams "$v"
        dep org.slf4j slf4j-api "$SLF4J_VERSION"
        dep org.slf4j slf4j-simple "$SLF4J_VERSION") ;;
      zookeeper) deps=$(dep org.apache.zookeeper zookeeper "$v"
        # The server needs metrics-core and snappy-java, which ZooKeeper's pom
        # leaves out of its runtime scope (its tarball ships both jars).
        dep io.dropwizard.metrics metrics-core "$ZK_METRICS_VERSION"
        dep org.xerial.snappy snappy-java "$ZK_SNAPPY_VERSION"
        dep org.slf4j slf4j-api "$SLF4J_VERSION"
        dep org.slf4j slf4j-simple "$SLF4J_VERSION") ;;
      *) die "internal: unknown kind $kind" ;;
    esac
    if fetch_jars "$kind" "$v" "$dest" "$deps"; then
      log "$kind $v: $(find "$dest/libs" -name '*.jar' | wc -l) jars in $dest/libs"
      ln -sfn "$kind-$v" "$CACHE/$link"
      return 0
    fi
    log "$kind $v: not available, trying the next version"
  done
  die "could not fetch any $kind release of: $* (is Maven Central reachable?)"
}

# install_python: a venv in $CACHE/venv with PYTHON_PACKAGES. A stamp
# holding the package list marks a finished install, so a second run with
# the same list does nothing and a changed list reinstalls.
install_python() {
  local venv="$CACHE/venv" want
  want=$(printf '%s\n' "${PYTHON_PACKAGES[@]}")
  if [[ -x "$venv/bin/python" && -f "$venv/.complete" && "$(cat "$venv/.complete")" == "$want" ]]; then
    log "python venv: cached in $venv ($("$venv/bin/python" -c 'import kafka; print("kafka-python", kafka.__version__)'))"
    return
  fi
  command -v python3 >/dev/null || die "python3 not found on PATH (kafka-python's tests need it)"
  mkdir -p "$CACHE"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv" || die "python3 -m venv $venv failed (on Debian: apt-get install python3-venv)"
  fi
  log "python venv: installing ${PYTHON_PACKAGES[*]}"
  "$venv/bin/pip" install -q --disable-pip-version-check "${PYTHON_PACKAGES[@]}" \
    || die "pip install into $venv failed"
  printf '%s\n' "$want" >"$venv/.complete"
  log "python venv: ready in $venv"
}

((want_go)) && install_go
((want_kcat)) && install_kcat
((want_kafka)) && install_release kafka kafka "${KAFKA_VERSIONS[@]}"
((want_kafka3)) && install_release kafka kafka3 "${KAFKA3_VERSIONS[@]}"
((want_connect)) && install_release connect connect "${KAFKA_VERSIONS[@]}"
((want_streams)) && install_release streams streams "${KAFKA_VERSIONS[@]}"
((want_python)) && install_python
((want_zk)) && install_release zookeeper zookeeper "${ZOOKEEPER_VERSIONS[@]}"
log "done (cache: $CACHE)"
