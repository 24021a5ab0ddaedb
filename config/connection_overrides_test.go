package config

import (
	"maps"
	"strings"
	"testing"
)

func TestParseConnectionOverrides(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]int32
		bad  bool
	}{
		{in: "", want: map[string]int32{}},
		{in: "hostName:100,127.0.0.1:200", want: map[string]int32{"hostName": 100, "127.0.0.1": 200}},
		{in: " 10.0.0.1 : 3 , ::1:0", want: map[string]int32{"10.0.0.1": 3, "::1": 0}},
		{in: "127.0.0.1", bad: true},
		{in: ":5", bad: true},
		{in: "h:-1", bad: true},
		{in: "h:x", bad: true},
		{in: "h:4294967296", bad: true},
	} {
		got, err := ParseConnectionOverrides(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted as %v", tc.in, got)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%q = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	_, _, err := FromMap(map[string]string{"log.dirs": t.TempDir(), "max.connections.per.ip.overrides": "nocount"})
	if err == nil || !strings.Contains(err.Error(), "max.connections.per.ip.overrides") {
		t.Errorf("a malformed max.connections.per.ip.overrides: %v, want an error naming it", err)
	}
}

// FuzzParseConnectionOverrides checks that any value either fails or
// yields non-negative counts for non-empty hosts, one per list element at
// most.
func FuzzParseConnectionOverrides(f *testing.F) {
	for _, seed := range []string{"", ",", ":", "h:1", "hostName:100,127.0.0.1:200", "::1:0", "h:2147483647", "h:2147483648", "h:1,h:2,garbage"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := ParseConnectionOverrides(v)
		if err != nil {
			return
		}
		if len(got) > strings.Count(v, ",")+1 {
			t.Fatalf("%q: %d entries from %d elements", v, len(got), strings.Count(v, ",")+1)
		}
		for h, n := range got {
			if h == "" || n < 0 {
				t.Fatalf("%q: entry %q:%d", v, h, n)
			}
		}
	})
}

// TestNetworkLimitsValidated checks Kafka's cross-checks of the network
// limits.
func TestNetworkLimitsValidated(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		bad   string // the config named in the error; "" for valid
	}{
		{map[string]string{"queued.max.request.bytes": "1000", "socket.request.max.bytes": "2000"}, "queued.max.request.bytes"},
		{map[string]string{"queued.max.request.bytes": "2000", "socket.request.max.bytes": "2000"}, ""},
		{map[string]string{"queued.max.request.bytes": "-1"}, ""},
		{map[string]string{"max.connections.per.ip": "0"}, "max.connections.per.ip"},
		{map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:5"}, ""},
	} {
		tc.props["log.dirs"] = t.TempDir()
		_, _, err := FromMap(tc.props)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%v: %v", tc.props, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%v: %v, want an error naming %s", tc.props, err, tc.bad)
		}
	}
}
