// Package testutil holds the helpers that Brook's tests share: free ports,
// building and running the brook binary as a real process, and running the
// Apache Kafka command-line tools from compat-tests/bin against it.
//
// Packages with many process tests build the binary once in TestMain:
//
//	var brookBin string
//
//	func TestMain(m *testing.M) {
//		bin, remove, err := testutil.Build("./cmd/brook")
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
// Setting BROOK_BIN to a prebuilt binary (make does) skips the build.
package testutil
