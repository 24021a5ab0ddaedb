#!/usr/bin/env bash
# make docker-test: build Brook's image and run it in a Docker engine.
#
# With registry access (FULL=1, or when golang:1.26-bookworm can be pulled)
# it builds docker/Dockerfile as is. Without (a machine whose engine cannot
# pull images), it builds the image's final stage from docker/Dockerfile
# over a binary built here, so that the runtime image (empty base, non-root
# user, volume, entrypoint, environment, healthcheck) is still the one
# tested. Then it runs one broker, waits for the HEALTHCHECK to pass, and
# produces and consumes a record from the host with kcat.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-docker}
IMAGE=brook:docker-test
NAME=brook-docker-test-$$
ctx=$(mktemp -d)
cleanup() { "$DOCKER" rm -f "$NAME" >/dev/null 2>&1 || true; rm -rf "$ctx"; }
trap cleanup EXIT

if [[ "${FULL:-}" == 1 ]] || timeout 60 "$DOCKER" pull -q golang:1.26-bookworm >/dev/null 2>&1; then
	echo "docker-test: building docker/Dockerfile"
	"$DOCKER" build -q -f docker/Dockerfile -t "$IMAGE" .
else
	echo "docker-test: cannot pull golang:1.26-bookworm; building the final stage of docker/Dockerfile over a local binary"
	mkdir -p "$ctx/out/data"
	CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$ctx/out/brook" ./cmd/brook
	# The same three files the build stage makes.
	sed -n 's/.*echo '"'"'\(brook:x:65532:65532:[^'"'"']*\)'"'"' > \/out\/passwd.*/\1/p' docker/Dockerfile > "$ctx/out/passwd"
	sed -n 's/.*echo '"'"'\(brook:x:65532:\)'"'"' > \/out\/group.*/\1/p' docker/Dockerfile > "$ctx/out/group"
	[[ -s "$ctx/out/passwd" && -s "$ctx/out/group" ]] || { echo "docker-test: cannot find the user lines in docker/Dockerfile"; exit 1; }
	{
		echo "FROM scratch AS build"
		echo "COPY out/ /out/"
		awk '/^FROM scratch$/ {final=1} final' docker/Dockerfile
	} > "$ctx/Dockerfile"
	DOCKER_BUILDKIT=0 "$DOCKER" build -q -t "$IMAGE" "$ctx"
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$DOCKER" run -d --name "$NAME" -p "127.0.0.1:$port:9092" \
	-e KAFKA_CFG_ADVERTISED_LISTENERS="PLAINTEXT://127.0.0.1:$port" \
	-e KAFKA_NUM_PARTITIONS=2 "$IMAGE" >/dev/null

user=$("$DOCKER" inspect -f '{{.Config.User}}' "$NAME")
[[ "$user" == "65532:65532" ]] || { echo "docker-test: runs as '$user', want 65532:65532"; exit 1; }
"$DOCKER" inspect -f '{{range .Mounts}}{{.Destination}} {{end}}' "$NAME" | grep -q /var/lib/brook/data \
	|| { echo "docker-test: no volume at /var/lib/brook/data"; exit 1; }

echo "docker-test: waiting for the HEALTHCHECK"
for _ in $(seq 1 60); do
	health=$("$DOCKER" inspect -f '{{.State.Health.Status}}' "$NAME")
	[[ "$health" == healthy ]] && break
	[[ "$("$DOCKER" inspect -f '{{.State.Running}}' "$NAME")" == true ]] || break
	sleep 2
done
if [[ "$health" != healthy ]]; then
	echo "docker-test: container is $health"; "$DOCKER" logs "$NAME" | tail -20; exit 1
fi

echo "docker-test: produce and consume through 127.0.0.1:$port"
echo "hello-docker" | kcat -b "127.0.0.1:$port" -t docker-test -P
got=$(kcat -b "127.0.0.1:$port" -t docker-test -C -c 1 -e -q)
[[ "$got" == hello-docker ]] || { echo "docker-test: consumed '$got'"; exit 1; }
parts=$(kcat -b "127.0.0.1:$port" -L -t docker-test | grep -c 'partition ')
[[ "$parts" == 2 ]] || { echo "docker-test: topic has $parts partitions, want KAFKA_NUM_PARTITIONS=2"; exit 1; }
logs=$("$DOCKER" logs "$NAME" 2>&1)
grep -q 'logger=kafka.server' <<<"$logs" || { echo "docker-test: no broker log lines"; exit 1; }
echo "docker-test: ok"
