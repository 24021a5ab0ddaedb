package testutil

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the CPU time (user and system, all threads) the process
// has used so far. Benchmarks report its difference per operation
// (cpu-ns/op) beside ns/op: on a shared, loaded machine wall time counts
// the other processes' turns, CPU time does not.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPUPerOp reports cpu-ns/op for a benchmark loop that started when
// the process had used cpu0 (from ProcessCPU).
func ReportCPUPerOp(b *testing.B, cpu0 time.Duration) {
	cpu := ProcessCPU(b) - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
