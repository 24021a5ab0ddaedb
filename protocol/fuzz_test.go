package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestDecoding drives the path every connection takes: frame, header,
// then the kmsg body decode. None of it may panic on any input.
func FuzzRequestDecoding(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 12))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrApiVersionsRequest()} {
		for _, v := range []int16{0, 3, req.MaxVersion()} {
			b := frameOf(f, req, v, "fuzz")
			framed := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
			framed = append(framed, b...)
			f.Add(framed)
			f.Add(append(framed, 0xde, 0xad))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, err := ReadFrame(bytes.NewReader(in), nil, 1<<20)
		if err != nil {
			return
		}
		h, body, err := ParseRequestHeader(frame)
		if err != nil {
			return
		}
		req := kmsg.RequestForKey(h.Key)
		if req == nil || h.Version < 0 || h.Version > req.MaxVersion() {
			return
		}
		req.SetVersion(h.Version)
		_ = req.ReadFrom(body)
	})
}
