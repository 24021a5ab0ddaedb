#!/usr/bin/env bash
# The replicated case of `make bench`: ZooKeeper and 3 brokers on loopback
# (scripts/cluster.sh, in a temp dir, on free ports), a topic with
# replication factor 3 and min.insync.replicas=2, 1 KiB records at
# acks=all, through bin/brook-bench. Everything started is stopped by PID.
#
#   scripts/bench-replicated.sh [brook-bench flags...]
#
# It prints each broker's CPU time over the benchmark (from /proc/PID/stat)
# and its write system calls (/proc/PID/io syscw).
# BENCH_PROFILE=DIR also takes a CPU profile of every broker for
# BENCH_PROFILE_SECONDS (default 10) from the start of the benchmark, through
# the brokers' pprof endpoint (brook.metrics.pprof.enable), into
# DIR/broker-N.pprof, and their metrics after it into DIR/broker-N.metrics.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ -x bin/brook && -x bin/brook-bench ]] || { echo "bench-replicated: run make build and build bin/brook-bench first" >&2; exit 1; }

# free_base: a base port with 3 free ports after it, and a free ZooKeeper port.
read -r base zk < <(python3 - <<'PY'
import socket
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
import random
while True:
    b = random.randrange(20000, 40000)
    if all(free(b + i) for i in range(3)) and free(b + 10):
        print(b, b + 10); break
PY
)
data=$(mktemp -d /tmp/brook-bench-cluster.XXXXXX)
profile_overrides=()
if [[ -n ${BENCH_PROFILE:-} ]]; then
  mkdir -p "$BENCH_PROFILE"
  profile_overrides=(--override brook.metrics.listener=127.0.0.1:0 --override brook.metrics.pprof.enable=true)
fi
scripts/cluster.sh --data "$data" --base-port "$base" --zk-port "$zk" -- \
  --override min.insync.replicas=2 --override offsets.topic.replication.factor=3 \
  "${profile_overrides[@]}" \
  > "$data/cluster.log" 2>&1 &
cluster=$!
cleanup() {
  kill -TERM "$cluster" 2>/dev/null || true
  wait "$cluster" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT

brokers="127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))"
for _ in $(seq 1 600); do
  up=0
  for p in "$base" $((base + 1)) $((base + 2)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && up=$((up + 1))
  done
  [[ $up -eq 3 ]] && break
  sleep 0.1
done
[[ $up -eq 3 ]] || { echo "bench-replicated: brokers did not start; log:" >&2; grep -v "^zookeeper" "$data/cluster.log" | tail -30 >&2; exit 1; }

# cpu_ticks PID: the process's user + system time in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# write_calls PID: the process's write system calls so far (write, pwrite,
# sendfile: /proc/PID/io syscw).
write_calls() { awk '/^syscw:/ {print $2}' "/proc/$1/io"; }
broker_pids=()
for id in 1 2 3; do broker_pids+=("$(cat "$data/broker-$id/pid")"); done
before=()
writes_before=()
for pid in "${broker_pids[@]}"; do
  before+=("$(cpu_ticks "$pid")")
  writes_before+=("$(write_calls "$pid")")
done

profilers=()
metrics_addrs=()
if [[ -n ${BENCH_PROFILE:-} ]]; then
  for id in 1 2 3; do
    addr=
    for _ in $(seq 1 100); do
      addr=$(grep "^broker-$id " "$data/cluster.log" | grep 'msg="metrics listening"' | grep -o 'addr=[0-9.:]*' | head -1 | cut -d= -f2 || true)
      [[ -n $addr ]] && break
      sleep 0.1
    done
    [[ -n $addr ]] || { echo "bench-replicated: broker $id logged no metrics address" >&2; exit 1; }
    metrics_addrs+=("$addr")
    curl -s -o "$BENCH_PROFILE/broker-$id.pprof" \
      "http://$addr/debug/pprof/profile?seconds=${BENCH_PROFILE_SECONDS:-10}" &
    profilers+=("$!")
  done
fi

echo "bench-replicated: 3 brokers ($brokers), RF=3, min.insync.replicas=2"
bin/brook-bench --brokers "$brokers" --replication-factor 3 --acks all --record-size 1024 "$@"
for pid in "${profilers[@]}"; do wait "$pid" || true; done
for i in "${!metrics_addrs[@]}"; do
  curl -s -o "$BENCH_PROFILE/broker-$((i + 1)).metrics" "http://${metrics_addrs[i]}/metrics" || true
done

hz=$(getconf CLK_TCK)
total=0
for i in 0 1 2; do
  ticks=$(($(cpu_ticks "${broker_pids[i]}") - before[i]))
  total=$((total + ticks))
  printf 'bench-replicated: broker %d CPU %s s, %d write system calls\n' $((i + 1)) "$(awk -v t="$ticks" -v hz="$hz" 'BEGIN{printf "%.2f", t/hz}')" \
    $(($(write_calls "${broker_pids[i]}") - writes_before[i]))
done
printf 'bench-replicated: brokers CPU total %s s\n' "$(awk -v t="$total" -v hz="$hz" 'BEGIN{printf "%.2f", t/hz}')"
