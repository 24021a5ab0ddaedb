// Package sim is Brook's deterministic simulation: several brokers and a
// ZooKeeper in one goroutine, on a simulated clock, store and network,
// driven by one seeded math/rand source, so that a failing run replays
// exactly from its seed (`go test ./sim -run TestSim -seed N`).
//
// The pieces:
//
//   - Scheduler (scheduler.go): events in virtual time, run one at a time;
//     ties keep their scheduling order, so no map order or goroutine
//     decides anything. Its clock is internal/testutil's Clock.
//   - ZK (zk.go): a store.Store per broker with ZooKeeper's sessions: the
//     tree, versions, ephemerals, watches and multi are the embedded
//     store's (controller/store), and a session expires when its client
//     has not been connected for its timeout in virtual time. It passes
//     the store conformance suite (controller/store/storetest).
//   - Net (net.go): the inter-broker transport: delay, drop, duplicate,
//     reorder (independent delays), partition and heal of broker pairs.
//   - FS (fs.go): each broker's disk, a log.FS in memory where a power
//     failure loses what was not fsynced (the first lost write maybe torn)
//     and a process crash loses nothing; durability.go holds the checks
//     that tell a record lost with every ISR member's disk from one lost
//     by Brook.
//   - Cluster (cluster.go, controller_driver.go, replication.go,
//     workload.go): N brokers
//     running the real replica.Manager and replica.Partition over real
//     log.Log directories on their simulated disks, and the real
//     controller.Controller through its step form (controller/step.go),
//     its watches, requests and timers scheduler events.
//   - Groups (groups.go): the real group.Coordinator on every broker, on
//     the topic's last partition through group.AsyncPartition, driven by
//     Coordinator.Step after every event; consumers commit and fetch
//     offsets (even seeds).
//   - Members (membership.go): consumers that join, sync, heartbeat,
//     commit and leave a group through the coordinator's step form
//     (StartJoinGroup, StartSyncGroup, Tick), on even seeds.
//   - Transactions and consumers (txn.go, txn_coordinator.go,
//     consumers.go): transactional producers calling the real
//     txn.Coordinator over the network, the coordinator on the topic's
//     last partition (__transaction_state) through its step form
//     (Coordinator.Step, Tick, Start* with txn.Pending), its markers
//     through the real log's transaction state; consumers at
//     read_uncommitted and read_committed reading through the real bounds
//     and aborted-transaction index (odd seeds).
//   - Controlled shutdowns (shutdown.go), one broker stop in two, and
//     topic creation and deletion while producing (topics.go, seeds 3
//     mod 4).
//   - Invariants (invariants.go, and each workload's own checks),
//     checked after every event and at the end.
//
// docs/architecture.md ("Simulation") says what is real code and what is
// modelled, and how to add a workload or an invariant.
package sim
