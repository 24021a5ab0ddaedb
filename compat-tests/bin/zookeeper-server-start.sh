#!/usr/bin/env bash
# Runs a ZooKeeper server from the jars of scripts/deps.sh --zookeeper:
#   zookeeper-server-start.sh zoo.cfg
set -euo pipefail
cache="${BROOK_CACHE:-$HOME/.cache/brook}"
home="${BROOK_ZOOKEEPER_HOME:-$cache/zookeeper}"
if [[ ! -f "$home/.complete" ]]; then
  echo "$0: no ZooKeeper jars in $home; run scripts/deps.sh --zookeeper first" >&2
  exit 127
fi
# shellcheck disable=SC2086
exec java ${ZK_HEAP_OPTS:--Xmx256m} ${ZK_GC_OPTS:--XX:+UseSerialGC} \
  -Dzookeeper.admin.enableServer=false \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${BROOK_TOOL_LOG_LEVEL:-info}" \
  -cp "$home/libs/*" org.apache.zookeeper.server.quorum.QuorumPeerMain "$@"
