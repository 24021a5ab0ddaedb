package broker

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// randomFetchResponse makes a response with every field the encoder writes
// set to something random, and records inline.
func randomFetchResponse(r *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	resp.ThrottleMillis = r.Int32()
	resp.ErrorCode = int16(r.IntN(100))
	resp.SessionID = r.Int32()
	for range r.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(bytes.Repeat([]byte{'a' + byte(r.IntN(26))}, r.IntN(40)))
		for i := range t.TopicID {
			t.TopicID[i] = byte(r.IntN(256))
		}
		for range r.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = r.Int32()
			p.ErrorCode = int16(r.IntN(100))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.Int64(), r.Int64(), r.Int64()
			p.PreferredReadReplica = r.Int32()
			if r.IntN(3) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = r.Int32(), r.Int64()
			}
			switch r.IntN(3) {
			case 0:
				p.AbortedTransactions = nil
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			default:
				for range 1 + r.IntN(3) {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = r.Int64(), r.Int64()
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			switch r.IntN(3) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			default:
				p.RecordBatches = make([]byte, 1+r.IntN(300))
				for i := range p.RecordBatches {
					p.RecordBatches[i] = byte(r.IntN(256))
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// flatten joins chunks, reading file regions, into the bytes a client gets.
func flatten(t *testing.T, chunks []fetchChunk) []byte {
	t.Helper()
	var out []byte
	for _, c := range chunks {
		out = append(out, c.bytes...)
		var err error
		if out, err = c.region.ReadInto(out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// moveRecordsToFile appends every non-empty record set of resp to f and
// replaces it with its file region, as a fetch read leaves them.
func moveRecordsToFile(t *testing.T, f *os.File, resp *kmsg.FetchResponse) [][]log.Slice {
	t.Helper()
	regions := make([][]log.Slice, len(resp.Topics))
	for ti := range resp.Topics {
		regions[ti] = make([]log.Slice, len(resp.Topics[ti].Partitions))
		for pi := range resp.Topics[ti].Partitions {
			p := &resp.Topics[ti].Partitions[pi]
			if len(p.RecordBatches) == 0 {
				continue
			}
			pos, err := f.Seek(0, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(p.RecordBatches); err != nil {
				t.Fatal(err)
			}
			regions[ti][pi] = log.Slice{File: f, Pos: pos, Size: int32(len(p.RecordBatches))}
			p.RecordBatches = []byte{}
		}
	}
	return regions
}

// TestEncodeFetchMatchesKmsg is the property test for the hand-written
// encoder: for every served version, random responses encode to kmsg's
// bytes, with records inline and with records as file regions.
func TestEncodeFetchMatchesKmsg(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	f, err := os.Create(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for version := int16(4); version <= 17; version++ {
		for range 300 {
			resp := randomFetchResponse(r, version)
			want := resp.AppendTo(nil)
			if got := flatten(t, encodeFetch(nil, resp, nil)); !bytes.Equal(got, want) {
				t.Fatalf("v%d inline: encoding differs from kmsg\n got %x\nwant %x", version, got, want)
			}
			regions := moveRecordsToFile(t, f, resp)
			if got := flatten(t, encodeFetch(nil, resp, regions)); !bytes.Equal(got, want) {
				t.Fatalf("v%d regions: encoding differs from kmsg\n got %x\nwant %x", version, got, want)
			}
		}
	}
}
