package main

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake broker process: with
// BROOK_BENCH_FAKE_ADDR set it answers ApiVersions probes on that address
// until SIGTERM, then exits with BROOK_BENCH_FAKE_EXIT. It also stands in
// for brook-bench as kfakeSpec runs it: given --serve-kfake ADDR, it is
// the kfake server, as main would be.
func TestMain(m *testing.M) {
	if addr, ok, err := parseServeKfake(os.Args[1:]); ok {
		if err != nil {
			os.Exit(2)
		}
		os.Exit(serveKfakeMain(addr))
	}
	if addr := os.Getenv("BROOK_BENCH_FAKE_ADDR"); addr != "" {
		code, _ := strconv.Atoi(os.Getenv("BROOK_BENCH_FAKE_EXIT"))
		runFakeServer(addr, code)
	}
	os.Exit(m.Run())
}

func runFakeServer(addr string, exitCode int) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		os.Exit(3)
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			req := make([]byte, 14)
			if _, err := io.ReadFull(conn, req); err == nil {
				_, _ = conn.Write(answerWith(binary.BigEndian.Uint32(req[8:]), 0))
			}
			conn.Close()
		}
	}()
	<-term
	os.Exit(exitCode)
}

func fakeSpec(t *testing.T, addr string, exitCode, sigtermStatus int) serverSpec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return serverSpec{
		name:          "fake",
		prepare:       []string{"true"},
		argv:          []string{self, "-test.run=^$"},
		env:           append(os.Environ(), "BROOK_BENCH_FAKE_ADDR="+addr, "BROOK_BENCH_FAKE_EXIT="+strconv.Itoa(exitCode)),
		sigtermStatus: sigtermStatus,
	}
}

func TestServerLifecycle(t *testing.T) {
	tests := []struct {
		name          string
		exitCode      int
		sigtermStatus int
		wantStopErr   bool
	}{
		{"clean exit", 0, 0, false},
		{"JVM-style 143 accepted", 143, 143, false},
		{"143 not accepted", 143, 0, true},
		{"other status", 1, 143, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, addr, _, err := newServerDir("fake")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := startServer(ctx, fakeSpec(t, addr, tt.exitCode, tt.sigtermStatus), dir, addr)
			if err != nil {
				t.Fatalf("startServer: %v", err)
			}
			if s.coldStart <= 0 {
				t.Errorf("cold start %v, want positive", s.coldStart)
			}
			if cpu, err := s.cpuTime(); err != nil || cpu < 0 {
				t.Errorf("cpuTime = %v, %v; want a non-negative time", cpu, err)
			}
			rss, err := s.peakRSS()
			if err != nil || rss <= 0 {
				t.Errorf("peakRSS = %d, %v; want a positive size", rss, err)
			}
			err = s.stop()
			if (err != nil) != tt.wantStopErr {
				t.Errorf("stop = %v, want error %v", err, tt.wantStopErr)
			}
			if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
				t.Errorf("temp dir %s left behind (%v)", dir, statErr)
			}
		})
	}
}

func TestStartServerFailedPrepare(t *testing.T) {
	dir, addr, _, err := newServerDir("fake")
	if err != nil {
		t.Fatal(err)
	}
	spec := fakeSpec(t, addr, 0, 0)
	spec.prepare = []string{"false"}
	if _, err := startServer(context.Background(), spec, dir, addr); err == nil {
		t.Fatal("startServer with a failing prepare step succeeded")
	}
	if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
		t.Errorf("temp dir %s left behind (%v)", dir, statErr)
	}
}

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"typical", "Name:\tbrook\nVmPeak:\t  900 kB\nVmHWM:\t   15360 kB\nVmRSS:\t 15000 kB\n", 15360 * 1024, false},
		{"zero", "VmHWM:\t0 kB\n", 0, false},
		{"missing", "Name:\tbrook\nVmRSS:\t 15000 kB\n", 0, true},
		{"wrong unit", "VmHWM:\t15 MB\n", 0, true},
		{"not a number", "VmHWM:\tlots kB\n", 0, true},
		{"negative", "VmHWM:\t-5 kB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmHWM([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseVmHWM = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    cpuTimes
		wantErr bool
	}{
		{"typical", "4242 (brook) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 75 0 0 20 0 9 0 100 1000 400", cpuTimes{2500 * time.Millisecond, 750 * time.Millisecond}, false},
		{"name with spaces and parens", "7 (java (x) y) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 6 7", cpuTimes{10 * time.Millisecond, 20 * time.Millisecond}, false},
		{"too short", "7 (x) R 1 2 3", cpuTimes{}, true},
		{"no name", "7 x R 1 2 3 4 5 6 7 8 9 10 11 12 13", cpuTimes{}, true},
		{"bad number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 a 2 0", cpuTimes{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseStatCPU = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
