# Brook's entry point; CI (.ci/run) runs these same targets.
#
# Test layout:
#   - Unit and in-process tests (every package except those below) run with
#     -race: they start brokers inside the test process on 127.0.0.1:0.
#   - Integration packages, under compat-tests/ and tests/, start brook
#     binaries, ZooKeeper and JVM tools as processes; they run without -race
#     (the race detector slows the broker ~10x and their subjects are other
#     processes anyway), against bin/brook: tests/cluster in one lane and
#     the others one package at a time in another.
# Both steps print go test's ok/FAIL line per package.

GO        ?= go
BIN       := bin
BROOK     := $(BIN)/brook
BENCH     := $(BIN)/brook-bench
FUZZTIME  ?= 30s
RUN_ARGS  ?=
BENCH_ARGS ?=

INTEGRATION_DIRS := compat-tests tests
# Test modules of their own (so Brook's go.mod never gains their client
# libraries); test-integration runs each after the packages above.
INTEGRATION_MODULES := compat-tests/sarama
MODULE           := $(shell $(GO) list -m 2>/dev/null)
INTEGRATION_RE   := ^$(MODULE)/($(subst $() $(),|,$(INTEGRATION_DIRS)))(/|$$)
# Evaluated when a recipe needs them, so new packages are always picked up.
ALL_PKGS          = $(shell $(GO) list -e ./...)
INTEGRATION_PKGS  = $(shell $(GO) list -e ./... | grep -E '$(INTEGRATION_RE)')
# sim/ is one goroutine per seed over real code whose concurrency the race runs of
# replica/ and controller/ cover; it runs without -race (20x faster there).
SIM_PKG          := $(MODULE)/sim
UNIT_PKGS         = $(shell $(GO) list -e ./... | grep -vE '$(INTEGRATION_RE)' | grep -vxF '$(SIM_PKG)')
COMPAT_PKGS       = $(shell $(GO) list -e ./... | grep -E '^$(MODULE)/compat-tests(/|$$)')

.PHONY: all run build test test-unit test-integration test-race fuzz bench \
	compat compat-sasl lint fmt-check vet deps deps-go clean bench-compare bench-scale docker-test

all: build

deps-go:
	@scripts/deps.sh --go

# Everything the full suite needs: Go modules, kcat, Kafka 4.x and 3.9 tool
# jars, Kafka Connect's and Kafka Streams' jars, kafka-python's venv, and
# ZooKeeper for the cluster tests.
deps:
	@scripts/deps.sh --go --kcat --kafka --kafka-3.9 --connect --streams --python --zookeeper

build:
	$(GO) build -o $(BROOK) ./cmd/brook

# One broker on 127.0.0.1:9092 with data in ./data. exec hands the terminal's
# Ctrl-C (SIGINT) straight to brook, which shuts down cleanly.
run: deps-go build
	@mkdir -p data
	exec ./$(BROOK) --override listeners=PLAINTEXT://127.0.0.1:9092 \
		--override log.dirs=$(CURDIR)/data $(RUN_ARGS)

lint: fmt-check vet

fmt-check:
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path './data/*' \
		-not -path './$(BIN)/*' -not -path './.cache/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$files" ]; then \
		echo "gofmt: these files need gofmt -w:"; echo "$$files"; exit 1; \
	fi; echo "gofmt: ok"

vet:
	$(GO) vet ./...

# The whole suite. Lint and both test steps run even if an earlier one
# fails, so one run shows every failure; the exit status is non-zero if
# anything failed.
test: deps
	@status=0; \
	$(MAKE) --no-print-directory lint || status=1; \
	$(MAKE) --no-print-directory test-unit || status=1; \
	$(MAKE) --no-print-directory test-integration || status=1; \
	if [ $$status -ne 0 ]; then echo "make test: FAILED (see above)"; fi; \
	exit $$status

# The simulation (1,000 seeds, GOMAXPROCS at a time, about 0.1 s of CPU
# each) runs beside the race-detector run, which leaves a core idle
# whenever its tests wait; its output follows. Its timeout is for a
# loaded machine: at a load average of 30-40 on 2 cores the package took
# 13.5 minutes (2.6 minutes of CPU).
test-unit:
	@mkdir -p $(BIN); status=0; \
	$(GO) test -count=1 -timeout 20m ./sim >$(BIN)/sim-test.out 2>&1 & sim=$$!; \
	echo "$(GO) test -race -count=1 -timeout 20m <unit packages>"; \
	$(GO) test -race -count=1 -timeout 20m $(UNIT_PKGS) || status=1; \
	wait $$sim || status=1; \
	echo "$(GO) test -count=1 -timeout 20m ./sim"; cat $(BIN)/sim-test.out; \
	exit $$status

# Two lanes, since most of their time is spent waiting on processes
# (sessions, elections, JVM start-up): tests/cluster alone in the
# background, every other package and module in the foreground; each lane
# runs one package at a time, and the background lane's output follows.
CLUSTER_PKG := $(MODULE)/tests/cluster
test-integration: build
	@pkgs="$(INTEGRATION_PKGS)"; status=0; \
	if [ -z "$$pkgs" ]; then echo "test-integration: no packages under $(INTEGRATION_DIRS)"; exit 0; fi; \
	lane=$$(echo "$$pkgs" | tr ' ' '\n' | grep -xF '$(CLUSTER_PKG)'); \
	rest=$$(echo "$$pkgs" | tr ' ' '\n' | grep -vxF '$(CLUSTER_PKG)' | tr '\n' ' '); \
	if [ -n "$$lane" ]; then \
		BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -timeout 20m $$lane >$(BIN)/cluster-test.out 2>&1 & bg=$$!; \
	fi; \
	echo "BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -p 1 -timeout 20m <integration packages but tests/cluster>"; \
	BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -p 1 -timeout 20m $$rest || status=1; \
	for m in $(INTEGRATION_MODULES); do \
		echo "(cd $$m && BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -timeout 5m ./...)"; \
		(cd $$m && BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -timeout 5m ./...) || status=1; \
	done; \
	if [ -n "$$lane" ]; then \
		wait $$bg || status=1; \
		echo "BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -timeout 20m $$lane"; cat $(BIN)/cluster-test.out; \
	fi; exit $$status

# Every package under the race detector, integration ones included.
test-race: deps build
	BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -race -count=1 -p 1 -timeout 30m $(ALL_PKGS)

# Each fuzz target for FUZZTIME (30s); crashers land in testdata/fuzz/.
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

compat: deps build
	@pkgs="$(COMPAT_PKGS)"; \
	if [ -z "$$pkgs" ]; then echo "compat: no Go test packages under compat-tests/ yet"; exit 1; fi; \
	BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -p 1 -timeout 20m $$pkgs

# The long SASL variants: every mechanism with each Java tool, and Kafka
# 3.9's tools as well as 4.x's (make test runs one mechanism, 4.x only).
# SASL_SSL: every mechanism for each client (make test: SCRAM-SHA-512).
compat-sasl: deps build
	BROOK_SASL_FULL=1 BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -p 1 -timeout 20m -run 'SASL' ./compat-tests/kafkatools ./compat-tests/kcat ./compat-tests/kafkapython ./compat-tests/franzgo ./tests/cluster

# Starts its own brook from bin/brook on a free port and stops it after;
# pass e.g. BENCH_ARGS="--acks both --records 500000". Then the log
# package's cleaning throughput (MB/s of dirty log compacted) next to a raw
# sequential file write (the disk's ceiling), see docs/benchmarks.md.
bench: build
	$(GO) build -o $(BENCH) ./cmd/brook-bench
	./$(BENCH) --brook-bin $(BROOK) --acks both $(BENCH_ARGS)
	$(GO) test -run XXX -bench 'Clean|RawWrite' -benchmem ./log
	@scripts/deps.sh --go --zookeeper
	scripts/bench-replicated.sh $(BENCH_ARGS)

# Brook against Apache Kafka 4.x on this machine, one after the other, with
# the same workload; prints a table of medians and ratios (takes minutes).
# BENCH_ARGS are passed on, e.g. BENCH_ARGS="--records 100000 --repeat 1",
# or BENCH_ARGS="--acks txn" for the transactional case alone.
bench-compare:
	scripts/bench-compare.sh $(BENCH_ARGS)

# Scale benchmarks (tests/scale, docs/benchmarks.md "Scale"): 10,000
# partitions on one broker, controller failover of a 3-broker ZooKeeper
# cluster, 10,000 connections; each once, as processes. SCALE_BENCH picks
# the benchmarks (a -bench pattern), SCALE_ARGS sets their sizes, e.g.
#   make bench-scale SCALE_BENCH=ClusterFailover SCALE_ARGS="-scale.cluster-partitions 3000 -scale.cluster-server kafka39"
SCALE_BENCH ?= .
SCALE_ARGS  ?=
bench-scale: build
	@scripts/deps.sh --go --zookeeper
	BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -timeout 4h -run '^$$' -bench '$(SCALE_BENCH)' -benchtime 1x ./tests/scale -args $(SCALE_ARGS)

clean:
	rm -rf $(BIN)

# ZooKeeper and three brokers on loopback: ports 9092-9094 (ZooKeeper 2181),
# data in ./data/cluster, each process's output on the terminal with a
# prefix; Ctrl-C stops the brokers one by one, then ZooKeeper, by PID.
# Flags for scripts/cluster.sh (see its --help) go in CLUSTER_ARGS, e.g.
# CLUSTER_ARGS="--base-port 19092 --zk-port 12181".
CLUSTER_ARGS ?=
# How long make chaos injects faults, in each of its three tests (make test
# runs each until it has injected every kind of fault once, at least 30s).
DURATION ?= 10m

.PHONY: cluster chaos soak-offsets cluster-sasl-ssl interop sim
# The deterministic simulation (sim/, docs/architecture.md "Simulation")
# over SEEDS seeds from FIRST_SEED (make test runs TestSim's 1000 from 1); SEED=<n>
# replays one seed with a longer trace.
SEEDS ?= 2000
FIRST_SEED ?= 1
SEED ?=
sim:
	$(GO) test -count=1 -timeout 0 -run '^TestSim$$' ./sim -args \
		$(if $(SEED),-seed $(SEED) -tracelen 400,-seeds $(SEEDS) -first-seed $(FIRST_SEED))

# The container image in a Docker engine (docs/docker.md); DOCKER=podman
# works too.
docker-test:
	scripts/docker-test.sh

cluster: build
	@scripts/deps.sh --go --zookeeper
	@scripts/cluster.sh $(CLUSTER_ARGS)

# Only the chaos tests of tests/cluster (records, group commits, then
# transactions),
# verbose, each for DURATION (e.g. make chaos DURATION=30m). Each phase of the test has its own deadline, so
# go test's overall timeout is off; CHAOS_SEED=<n> replays a fault schedule.
chaos: build
	@scripts/deps.sh --go --zookeeper
	BROOK_BIN=$(CURDIR)/$(BROOK) CHAOS_DURATION=$(DURATION) $(GO) test -count=1 -v -timeout 0 -run '^TestChaos(Groups|Txn)?$$' ./tests/cluster

# Every test of tests/cluster with the brokers talking to each other over a
# SASL_SSL listener (mutual TLS, then SCRAM-SHA-512); the tests' clients
# stay on PLAINTEXT. About 10 minutes; docs/security.md.
cluster-sasl-ssl: build
	@scripts/deps.sh --go --zookeeper
	BROOK_CLUSTER_INTER_BROKER=SASL_SSL BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -timeout 30m ./tests/cluster

# The __consumer_offsets bound of tests/compaction at the compaction issue's
# full size: 1,000,000 offset commits by 10 groups (make test runs 100,000),
# about 10 minutes on the 2-core machine; COMMITS=<n> changes it.
COMMITS ?= 1000000
soak-offsets: build
	BROOK_BIN=$(CURDIR)/$(BROOK) COMPACTION_COMMITS=$(COMMITS) $(GO) test -count=1 -v -timeout 0 -run '^TestConsumerOffsetsBounded$$' ./tests/compaction

# tests/interop in full, verbose: Kafka 3.9 and Brook take turns on one log
# dir, the mixed Kafka 3.9 + Brook cluster also kills and restarts the
# second Kafka broker (make test stops after the controller and Brook),
# three Kafka 3.9 brokers are rolled to Brook and back with a crash in each
# pass (make test: going forward only), and the controller moves Brook -> Kafka ->
# Brook with admin rounds through Kafka 3.9's tools (make test stops after
# the Kafka round and uses franz-go's admin requests); docs/migration.md.
interop: build
	@scripts/deps.sh --go --zookeeper --kafka-3.9
	INTEROP_FULL=1 BROOK_BIN=$(CURDIR)/$(BROOK) $(GO) test -count=1 -v -timeout 30m ./tests/interop
