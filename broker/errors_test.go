package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// rawBatch builds a batch of n records of size bytes each.
func rawBatch(t *testing.T, n, size int, producer *batch.Producer) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: make([]byte, size)}
	}
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli(), Producer: producer}, recs, batch.MustCodecs())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produceRaw sends one Produce request for a single partition and returns
// the partition's response.
func produceRaw(t *testing.T, tb *testBroker, topic string, partition int32, acks int16, records []byte, txnID *string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return produceRawAt(t, tb, 9, topic, partition, acks, records, txnID)
}

// produceRawAt is produceRaw at a given Produce version.
func produceRawAt(t *testing.T, tb *testBroker, version int16, topic string, partition int32, acks int16, records []byte, txnID *string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis, req.TransactionID = acks, 5000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if acks == 0 {
		t.Fatal("produceRaw expects a response; acks=0 has none")
	}
	return tb.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Fatalf("%s: error code %d (%v), want %d (%s)", what, got, kerr.ErrorForCode(got), want.Code, want.Message)
	}
}

func TestProduceErrorCodes(t *testing.T) {
	tb := startBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	small := "1000"
	tb.createTopic("errs", 1, map[string]*string{"max.message.bytes": &small})

	wantCode(t, "acks=2", produceRaw(t, tb, "errs", 0, 2, rawBatch(t, 1, 10, nil), nil).ErrorCode, kerr.InvalidRequiredAcks)
	wantCode(t, "unknown topic", produceRaw(t, tb, "nope", 0, 1, rawBatch(t, 1, 10, nil), nil).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown partition", produceRaw(t, tb, "errs", 7, 1, rawBatch(t, 1, 10, nil), nil).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "too large", produceRaw(t, tb, "errs", 0, 1, rawBatch(t, 1, 2000, nil), nil).ErrorCode, kerr.MessageTooLarge)

	corrupt := rawBatch(t, 2, 10, nil)
	corrupt[len(corrupt)-1] ^= 0xff
	wantCode(t, "bad crc", produceRaw(t, tb, "errs", 0, 1, corrupt, nil).ErrorCode, kerr.CorruptMessage)

	two := append(rawBatch(t, 1, 10, nil), rawBatch(t, 1, 10, nil)...)
	wantCode(t, "two batches", produceRaw(t, tb, "errs", 0, 1, two, nil).ErrorCode, kerr.InvalidRecord)

	// Nothing of the above reached the log.
	ok := produceRaw(t, tb, "errs", 0, 1, rawBatch(t, 1, 10, nil), nil)
	if ok.ErrorCode != 0 || ok.BaseOffset != 0 {
		t.Fatalf("first good batch: code %d offset %d, want offset 0", ok.ErrorCode, ok.BaseOffset)
	}
}

func TestInternalAndInvalidTopics(t *testing.T) {
	tb := startBroker(t, nil)
	cl := tb.client()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"bad name!", "..", string(make([]byte, 250))} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range resp.Topics {
		wantCode(t, "metadata for "+*mt.Topic, mt.ErrorCode, kerr.InvalidTopicException)
	}
	ctx := testContext(t)
	res, err := tb.admin().CreateTopic(ctx, 1, 1, nil, "bad/name")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("create bad/name: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	// Auto-creation makes a topic on first metadata request, answered with
	// LEADER_NOT_AVAILABLE and then, once elected, with its leader.
	auto := kmsg.NewPtrMetadataRequest()
	auto.SetVersion(12)
	auto.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto-made")
	auto.Topics = append(auto.Topics, rt)
	first := tb.roundTrip(auto).(*kmsg.MetadataResponse)
	wantCode(t, "first metadata of an auto-created topic", first.Topics[0].ErrorCode, kerr.LeaderNotAvailable)
	deadline := time.Now().Add(20 * time.Second)
	for {
		md := tb.roundTrip(auto).(*kmsg.MetadataResponse)
		if mt := md.Topics[0]; mt.ErrorCode == 0 && len(mt.Partitions) == 1 && mt.Partitions[0].Leader == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("auto-created topic never got a leader: %+v", md.Topics[0])
		}
	}
	// A client that does not allow auto-creation gets UNKNOWN_TOPIC_OR_PARTITION.
	auto.AllowAutoTopicCreation = false
	auto.Topics[0].Topic = kmsg.StringPtr("not-made")
	wantCode(t, "metadata without auto-creation", tb.roundTrip(auto).(*kmsg.MetadataResponse).Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

func TestCreateTopicsErrorCodes(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("exists", 1, nil)
	ctx := testContext(t)
	adm := tb.admin()
	check := func(what string, res error, want *kerr.Error) {
		t.Helper()
		if !errors.Is(res, want) {
			t.Fatalf("%s: %v, want %s", what, res, want.Message)
		}
	}
	r, err := adm.CreateTopic(ctx, 1, 1, nil, "exists")
	check("exists", firstErr(err, r.Err), kerr.TopicAlreadyExists)
	r, err = adm.CreateTopic(ctx, 0, 1, nil, "zero-partitions")
	check("zero partitions", firstErr(err, r.Err), kerr.InvalidPartitions)
	r, err = adm.CreateTopic(ctx, 1, 3, nil, "rf3")
	check("rf 3 on one broker", firstErr(err, r.Err), kerr.InvalidReplicationFactor)
	bad := "-5"
	r, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.bytes": nil, "segment.bytes": &bad}, "bad-config")
	if e := firstErr(err, r.Err); e == nil {
		t.Fatalf("bad config accepted")
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func TestFetchOffsetOutOfRange(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("oor", 1, nil)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "oor"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 5, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.roundTrip(req).(*kmsg.FetchResponse)
	wantCode(t, "fetch past the end", resp.Topics[0].Partitions[0].ErrorCode, kerr.OffsetOutOfRange)
}

func TestIdempotentSequences(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("idem", 1, nil)
	cl := tb.client()
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(testContext(t), cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %d", err, init.ErrorCode)
	}
	p := func(seq int32, epoch int16) *batch.Producer {
		return &batch.Producer{ID: init.ProducerID, Epoch: epoch, BaseSequence: seq}
	}
	first := produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 3, 10, p(0, 0)), nil)
	if first.ErrorCode != 0 || first.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", first)
	}
	second := produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 2, 10, p(3, 0)), nil)
	if second.ErrorCode != 0 || second.BaseOffset != 3 {
		t.Fatalf("second batch: %+v", second)
	}
	dup := produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 3, 10, p(0, 0)), nil)
	if dup.ErrorCode != 0 || dup.BaseOffset != 0 {
		t.Fatalf("duplicate of the first batch: code %d offset %d, want the original offset 0", dup.ErrorCode, dup.BaseOffset)
	}
	wantCode(t, "gap", produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 1, 10, p(9, 0)), nil).ErrorCode, kerr.OutOfOrderSequenceNumber)
	bumped := produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 1, 10, p(0, 1)), nil)
	if bumped.ErrorCode != 0 {
		t.Fatalf("new epoch from sequence 0: %+v", bumped)
	}
	wantCode(t, "stale epoch", produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 1, 10, p(5, 0)), nil).ErrorCode, kerr.InvalidProducerEpoch)

	// Producer state survives a restart: the duplicate is still known.
	tb.restart()
	cl = tb.client()
	again := produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 2, 10, p(3, 0)), nil)
	if again.ErrorCode == 0 && again.BaseOffset != 3 {
		t.Fatalf("duplicate after restart appended again at %d", again.BaseOffset)
	}
	next := produceRaw(t, tb, "idem", 0, -1, rawBatch(t, 1, 10, p(1, 1)), nil)
	if next.ErrorCode != 0 || next.BaseOffset != 6 {
		t.Fatalf("next batch of the bumped epoch after restart: %+v", next)
	}
}

// rawConn is a plain TCP connection for sending hand-made frames.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func writeFrame(t *testing.T, c net.Conn, body []byte) {
	t.Helper()
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		t.Fatal(err)
	}
}

// expectClosed asserts that the broker closes c without answering.
func expectClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	buf := make([]byte, 1)
	if n, err := c.Read(buf); err != io.EOF {
		t.Fatalf("%s: read %d bytes, err %v; want the connection closed", what, n, err)
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	tb := startBroker(t, nil)
	cases := map[string][]byte{
		"unknown key":         {0x7f, 0x00, 0, 1, 0, 0, 0, 1, 0, 0},
		"unsupported version": {0, 3, 0x7f, 0, 0, 0, 0, 1, 0, 0},
		"truncated body":      {0, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 5},
		"garbage header":      {0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0x7f},
	}
	for name, frame := range cases {
		c := rawConn(t, tb.addr)
		writeFrame(t, c, frame)
		expectClosed(t, c, name)
	}
	for name, prefix := range map[string][]byte{"negative size": {0xff, 0xff, 0xff, 0xfe}, "huge size": {0x7f, 0xff, 0xff, 0xff}, "tiny size": {0, 0, 0, 3}} {
		c := rawConn(t, tb.addr)
		if _, err := c.Write(prefix); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c, name)
	}
	// The broker still serves well-behaved clients.
	if _, err := tb.admin().ListTopics(testContext(t)); err != nil {
		t.Fatalf("broker stopped serving after bad input: %v", err)
	}
}

func TestApiVersionsAboveMaxGetsV0Answer(t *testing.T) {
	tb := startBroker(t, nil)
	c := rawConn(t, tb.addr)
	// ApiVersions v99, header v2: client id "c", empty tags, empty body tags.
	writeFrame(t, c, []byte{0, 18, 0, 99, 0, 0, 0, 9, 0, 1, 'c', 0, 0})
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, frame); err != nil {
		t.Fatal(err)
	}
	if corr := binary.BigEndian.Uint32(frame); corr != 9 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "ApiVersions v99", resp.ErrorCode, kerr.UnsupportedVersion)
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("api keys %+v, want only ApiVersions 0-4", resp.ApiKeys)
	}
}

func TestFailedAcksZeroProduceClosesConnection(t *testing.T) {
	tb := startBroker(t, nil)
	c := rawConn(t, tb.addr)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 0, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "does-not-exist"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawBatch(t, 1, 10, nil)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c, "failed acks=0 produce")
}

func TestZstdNeedsProduceV7(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("z", 1, nil)
	recs := []batch.Record{{Key: []byte("k"), Value: []byte("v")}}
	zstd, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, Compression: batch.Zstd, BaseTimestamp: time.Now().UnixMilli()}, recs, batch.MustCodecs())
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(6)
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "z"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = zstd
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.roundTrip(req).(*kmsg.ProduceResponse)
	wantCode(t, "zstd on Produce v6", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnsupportedCompressionType)
	if p := produceRaw(t, tb, "z", 0, 1, zstd, nil); p.ErrorCode != 0 {
		t.Fatalf("zstd on Produce v9: %+v", p)
	}
}

// TestTopicCompressionTypeReencodes checks that a topic with
// compression.type=gzip stores an uncompressed producer batch as gzip, and
// that its records read back unchanged.
func TestTopicCompressionTypeReencodes(t *testing.T) {
	tb := startBroker(t, nil)
	gzip := "gzip"
	tb.createTopic("gz", 1, map[string]*string{"compression.type": &gzip})
	sent := rawBatch(t, 5, 100, nil)
	if p := produceRaw(t, tb, "gz", 0, 1, sent, nil); p.ErrorCode != 0 {
		t.Fatalf("produce: %+v", p)
	}
	slice, err := tb.b.replicas.Get("gz", 0).Log().Read(0, 1<<20, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := slice.ReadInto(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, recs, err := batch.ReadRecords(stored, batch.MustCodecs())
	if err != nil {
		t.Fatal(err)
	}
	if h.Compression() != batch.Gzip || len(recs) != 5 || len(recs[4].Value) != 100 {
		t.Fatalf("stored codec %d with %d records, want gzip with 5", h.Compression(), len(recs))
	}
}
