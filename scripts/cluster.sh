#!/usr/bin/env bash
# Runs a local Brook cluster: one ZooKeeper and three brokers on loopback,
# each process's output on this terminal with a prefix. Ctrl-C (or SIGTERM)
# stops the brokers one by one (SIGTERM: controlled shutdown), then ZooKeeper.
#
#   scripts/cluster.sh [--brokers N] [--base-port 9092] [--zk-port 2181]
#                      [--data DIR] [--bin bin/brook] [-- brook overrides...]
#
# Broker i (0-based) gets broker.id=i+1, port base-port+i and data in
# DIR/broker-<id>; ZooKeeper keeps its data in DIR/zookeeper. DIR defaults
# to ./data/cluster, so a second run finds the same cluster again. Extra
# arguments after -- are passed to every broker (e.g. -- --override
# min.insync.replicas=2).
set -euo pipefail

cd "$(dirname "$0")/.."

brokers=3
base_port=9092
zk_port=2181
data=data/cluster
bin=bin/brook
extra=()

die() { printf 'cluster: ERROR: %s\n' "$*" >&2; exit 1; }
log() { printf 'cluster: %s\n' "$*" >&2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --brokers) brokers=$2; shift 2 ;;
    --base-port) base_port=$2; shift 2 ;;
    --zk-port) zk_port=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

[[ -x $bin ]] || die "$bin not found: run make build first"
[[ $brokers =~ ^[1-9][0-9]*$ ]] || die "--brokers wants a positive number, got $brokers"
mkdir -p "$data/zookeeper"
data=$(cd "$data" && pwd)

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

port_free "$zk_port" || die "port $zk_port (ZooKeeper) is in use; pass --zk-port"
for ((i = 0; i < brokers; i++)); do
  port_free $((base_port + i)) || die "port $((base_port + i)) is in use; pass --base-port"
done

pids=()
declare -A names # pid -> name
stopping=0

# prefix NAME: copies stdin to stdout with "NAME | " before each line.
# It ignores SIGINT so that the terminal's Ctrl-C does not cut a process's
# last lines off.
prefix() {
  trap '' INT
  while IFS= read -r line; do printf '%-10s| %s\n' "$1" "$line"; done
}

stop_all() {
  ((stopping)) && return
  stopping=1
  trap '' INT TERM
  log "stopping"
  # One broker at a time, each with its controlled shutdown, so that
  # leadership moves to brokers still running instead of bouncing between
  # brokers that are all leaving; ZooKeeper last, since brokers need it
  # while they stop.
  local i pid zk=
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    if [[ ${names[$pid]} == zookeeper ]]; then
      zk=$pid
      continue
    fi
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ -n $zk ]]; then
    kill -TERM "$zk" 2>/dev/null || true
    wait "$zk" 2>/dev/null || true
  fi
  log "stopped"
}
trap 'stop_all; exit 0' INT TERM
trap stop_all EXIT

cat >"$data/zookeeper/zoo.cfg" <<EOF
tickTime=500
initLimit=10
syncLimit=5
dataDir=$data/zookeeper/data
clientPort=$zk_port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,stat
EOF

# Each process runs in the background with its output piped through prefix
# (a process substitution, so $! is the process itself); its pid is also
# written to PIDFILE for anyone who wants to signal one process by hand.
start() { # NAME PIDFILE CMD...
  local name=$1 pidfile=$2
  shift 2
  # setsid keeps the terminal's Ctrl-C away from the process: stop_all
  # stops them in order instead.
  setsid "$@" > >(prefix "$name") 2>&1 &
  pids+=("$!")
  names[$!]=$name
  echo "$!" >"$pidfile"
}

log "zookeeper on 127.0.0.1:$zk_port, data in $data/zookeeper"
start zookeeper "$data/zookeeper/pid" compat-tests/bin/zookeeper-server-start.sh "$data/zookeeper/zoo.cfg"

# Brokers retry the connection themselves for zookeeper.connection.timeout.ms,
# but starting them against a serving ZooKeeper keeps their logs clean.
for ((i = 0; i < 150; i++)); do
  if reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$zk_port" && printf srvr >&3 && cat <&3) 2>/dev/null) \
    && [[ $reply == Zookeeper\ version:* ]]; then
    break
  fi
  kill -0 "${pids[0]}" 2>/dev/null || die "ZooKeeper exited; see its output above"
  sleep 0.2
done

bootstrap=()
for ((i = 0; i < brokers; i++)); do
  id=$((i + 1))
  port=$((base_port + i))
  dir="$data/broker-$id"
  mkdir -p "$dir"
  bootstrap+=("127.0.0.1:$port")
  log "broker $id on 127.0.0.1:$port, data in $dir"
  start "broker-$id" "$dir/pid" "$bin" \
    --override "broker.id=$id" \
    --override "listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "log.dirs=$dir/logs" \
    --override "zookeeper.connect=127.0.0.1:$zk_port" \
    --override "default.replication.factor=$((brokers < 3 ? brokers : 3))" \
    --override "offsets.topic.replication.factor=$((brokers < 3 ? brokers : 3))" \
    --override "group.initial.rebalance.delay.ms=0" \
    "${extra[@]}"
done

log "bootstrap servers: $(IFS=,; echo "${bootstrap[*]}")  (Ctrl-C stops the cluster)"
# A process that ends (kill -9 to try a failover, a clash of broker.id) is
# reported and dropped from the list, and the others keep running, so that
# it can be started again by hand; Ctrl-C stops whatever still runs.
set +e
while ((${#pids[@]} > 0)); do
  done_pid=
  wait -n -p done_pid "${pids[@]}"
  status=$?
  [[ -n $done_pid ]] || break
  log "${names[$done_pid]} (pid $done_pid) exited with status $status"
  remaining=()
  for pid in "${pids[@]}"; do
    [[ $pid == "$done_pid" ]] || remaining+=("$pid")
  done
  pids=("${remaining[@]}")
done
log "every process has exited"
