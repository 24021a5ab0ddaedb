package main

import (
	"testing"
)

func TestParseServeKfake(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantAddr string
		wantOK   bool
		wantErr  bool
	}{
		{"separate value", []string{"--serve-kfake", "127.0.0.1:9092"}, "127.0.0.1:9092", true, false},
		{"joined value", []string{"--serve-kfake=127.0.0.1:9093"}, "127.0.0.1:9093", true, false},
		{"one dash", []string{"-serve-kfake", "127.0.0.1:9094"}, "127.0.0.1:9094", true, false},
		{"not the mode", []string{"--compare", "kfake"}, "", false, false},
		{"no arguments", nil, "", false, false},
		{"mode later is not the mode", []string{"--records", "5", "--serve-kfake", "127.0.0.1:1"}, "", false, false},
		{"no address", []string{"--serve-kfake"}, "", true, true},
		{"extra argument", []string{"--serve-kfake", "127.0.0.1:1", "--records", "5"}, "", true, true},
		{"other host", []string{"--serve-kfake", "0.0.0.0:9092"}, "", true, true},
		{"no port", []string{"--serve-kfake", "127.0.0.1"}, "", true, true},
		{"port zero", []string{"--serve-kfake", "127.0.0.1:0"}, "", true, true},
		{"port too large", []string{"--serve-kfake", "127.0.0.1:70000"}, "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, ok, err := parseServeKfake(tt.args)
			if addr != tt.wantAddr || ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Errorf("parseServeKfake(%q) = %q, %v, %v; want %q, %v, error %v", tt.args, addr, ok, err, tt.wantAddr, tt.wantOK, tt.wantErr)
			}
		})
	}
}
