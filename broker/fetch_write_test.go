package broker

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// writeCountingConn is a net.Conn that keeps what is written and counts
// the writes; it is not a syscall.Conn, so regions it is sent are copied.
type writeCountingConn struct {
	net.Conn
	writes int
	out    bytes.Buffer
}

func (c *writeCountingConn) Write(b []byte) (int, error) {
	c.writes++
	return c.out.Write(b)
}

// TestWriteFetchSmallRegionsInOneWrite: a fetch response whose record
// sets are small in all (a long poll woken by one produce, a follower's
// fetch of a few batches) goes out in one write, its regions read into the
// frame, instead of a write per framing chunk and a sendfile per region
// between two TCP_CORK calls: five system calls or more for one small
// record set. Larger ones are still sent from the file. Both frames are
// kmsg's encoding.
func TestWriteFetchSmallRegionsInOneWrite(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	f, err := os.Create(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for version := int16(4); version <= 17; version++ {
		for range 100 {
			resp := randomFetchResponse(r, version)
			big := r.IntN(4) == 0
			if big && len(resp.Topics) > 0 && len(resp.Topics[0].Partitions) > 0 {
				resp.Topics[0].Partitions[0].RecordBatches = bytes.Repeat([]byte{7}, inlineFetchBytes+1)
			}
			body := resp.AppendTo(nil)
			regions := moveRecordsToFile(t, f, resp)
			c := &writeCountingConn{}
			if _, err := writeFetch(c, nil, 42, resp, regions); err != nil {
				t.Fatal(err)
			}
			header := []byte{0, 0, 0, 42}
			if resp.IsFlexible() {
				header = append(header, 0)
			}
			want := binary.BigEndian.AppendUint32(nil, uint32(len(header)+len(body)))
			want = append(append(want, header...), body...)
			if got := c.out.Bytes(); !bytes.Equal(got, want) {
				t.Fatalf("v%d: frame differs from kmsg's\n got %x\nwant %x", version, got, want)
			}
			sent := 0
			for _, rs := range regions {
				for _, s := range rs {
					sent += int(s.Size)
				}
			}
			if sent <= inlineFetchBytes && c.writes != 1 {
				t.Fatalf("v%d: %d bytes of records went out in %d writes, want 1", version, sent, c.writes)
			}
		}
	}
}
