#!/usr/bin/env bash
# The replicated case of `make bench`: ZooKeeper and 3 brokers on loopback
# (scripts/cluster.sh, in a temp dir, on free ports), a topic with
# replication factor 3 and min.insync.replicas=2, 1 KiB records at
# acks=all, through bin/brook-bench. Everything started is stopped by PID.
#
#   scripts/bench-replicated.sh [brook-bench flags...]
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
scripts/cluster.sh --data "$data" --base-port "$base" --zk-port "$zk" -- \
  --override min.insync.replicas=2 --override offsets.topic.replication.factor=3 \
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

echo "bench-replicated: 3 brokers ($brokers), RF=3, min.insync.replicas=2"
bin/brook-bench --brokers "$brokers" --replication-factor 3 --acks all --record-size 1024 "$@"
