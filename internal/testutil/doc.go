// Package testutil holds the helpers that Brook's tests share, so that no
// test package grows its own copy:
//
//   - FreePort, Eventually (poll a condition with a deadline), Client (a
//     franz-go client closed at cleanup);
//   - Build, BuildBrook and StartBrook: the brook binary as a real process
//     with Stop, Kill9, Restart and LogTail;
//   - StartZooKeeper: a ZooKeeper server for cluster tests;
//   - KafkaTool, KafkaToolStdin and Kcat: Apache Kafka's command-line tools
//     (compat-tests/bin) and kcat, with a timeout;
//   - AppendLegacyMessage: magic 0/1 messages as Produce v0-2 carry them,
//     written independently of protocol/batch's decoder.
//
// The JVM tools and ZooKeeper need scripts/deps.sh --kafka --zookeeper
// (make test runs it).
//
// Packages with many process tests get the binary once in TestMain:
//
//	var brookBin string
//
//	func TestMain(m *testing.M) {
//		bin, remove, err := testutil.BrookBinary()
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		brookBin = bin
//		code := m.Run()
//		remove()
//		os.Exit(code)
//	}
//
// and start brokers with testutil.StartBrook(t, brookBin, overrides).
// Setting BROOK_BIN to a prebuilt binary (make does) skips the build in
// both BrookBinary and BuildBrook.
package testutil
