package batch

import (
	"bytes"
	"errors"
	"testing"
)

func TestEachBatch(t *testing.T) {
	a := validBatch(t, None, 1)
	b := validBatch(t, Gzip, 3)
	SetBaseOffset(b, 1)
	all := append(bytes.Clone(a), b...)
	badCRC := bytes.Clone(b)
	badCRC[len(badCRC)-1] ^= 0xff
	tests := []struct {
		name    string
		in      []byte
		next    int64
		n, keys int
		err     error
	}{
		{"empty", nil, -1, 0, 0, nil},
		{"two", all, 4, 2, 4, nil},
		{"partial batch at the end", all[:len(all)-3], 1, 1, 1, nil},
		{"bad CRC", append(bytes.Clone(a), badCRC...), 1, 1, 1, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := 0
			next, n, err := EachBatch(tt.in, func(h *Header, raw []byte) error {
				return EachKeyedRecord(raw, MustCodecs(), func(k, v []byte) error {
					if string(k) != "k" || string(v) != "value" {
						t.Errorf("record %q=%q", k, v)
					}
					keys++
					return nil
				})
			})
			if (err == nil) != (tt.err == nil) || (tt.err != nil && !errors.Is(err, tt.err)) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if next != tt.next || n != tt.n || keys != tt.keys {
				t.Fatalf("next %d, %d batches, %d records; want %d, %d, %d", next, n, keys, tt.next, tt.n, tt.keys)
			}
		})
	}
	stop := errors.New("stop")
	if _, n, err := EachBatch(all, func(*Header, []byte) error { return stop }); !errors.Is(err, stop) || n != 0 {
		t.Fatalf("fn's error: %v after %d batches", err, n)
	}
}
