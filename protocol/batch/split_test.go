package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestSplit(t *testing.T) {
	a := validBatch(t, None, 1)
	b := validBatch(t, Gzip, 3)
	c := validBatch(t, LZ4, 2)
	all := bytes.Join([][]byte{a, b, c}, nil)
	corrupt := bytes.Clone(b)
	binary.BigEndian.PutUint32(corrupt[8:], 3)
	tests := []struct {
		name    string
		in      []byte
		batches [][]byte
		rest    []byte
		err     error
	}{
		{"empty", nil, nil, nil, nil},
		{"one", a, [][]byte{a}, nil, nil},
		{"three", all, [][]byte{a, b, c}, nil, nil},
		{"partial header at end", all[:len(a)+len(b)+20], [][]byte{a, b}, c[:20], nil},
		{"partial batch at end", all[:len(all)-1], [][]byte{a, b}, c[:len(c)-1], nil},
		{"length prefix only", append(bytes.Clone(a), c[:5]...), [][]byte{a}, c[:5], nil},
		{"corrupt length", append(bytes.Clone(a), corrupt...), [][]byte{a}, corrupt, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batches, rest, err := Split(tt.in)
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if len(batches) != len(tt.batches) {
				t.Fatalf("%d batches, want %d", len(batches), len(tt.batches))
			}
			for i := range batches {
				if !bytes.Equal(batches[i], tt.batches[i]) {
					t.Fatalf("batch %d differs", i)
				}
			}
			if !bytes.Equal(rest, tt.rest) {
				t.Fatalf("rest %x, want %x", rest, tt.rest)
			}
		})
	}
}

func TestNext(t *testing.T) {
	a := validBatch(t, None, 1)
	b := validBatch(t, Snappy, 2)
	h, rest, err := Next(append(bytes.Clone(a), b...))
	if err != nil || h.Size() != len(a) || !bytes.Equal(rest, b) {
		t.Fatalf("Next: %+v, %d rest bytes, %v", h, len(rest), err)
	}
	if _, _, err := Next(b[:len(b)-1]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("partial batch: %v", err)
	}
}
