package broker

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// legacyMessages are three messages stamped around now, one without a key.
func legacyMessages(now int64) []testutil.LegacyMessage {
	return []testutil.LegacyMessage{
		{Key: []byte("k0"), Value: []byte("v0"), Timestamp: now},
		{Key: nil, Value: []byte("v1"), Timestamp: now + 3},
		{Key: []byte("k2"), Value: nil, Timestamp: now - 2},
	}
}

// legacyProduce sends one Produce request of version (0-2) carrying set
// for partition 0 of topic and returns the whole response.
func legacyProduce(t *testing.T, tb *testBroker, version int16, topic string, set []byte) *kmsg.ProduceResponse {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = set
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return tb.roundTrip(req).(*kmsg.ProduceResponse)
}

// storedBatch reads back the batch the log holds at offset.
func storedBatch(t *testing.T, tb *testBroker, topic string, offset int64) (batch.Header, []batch.Record) {
	t.Helper()
	slice, err := tb.b.replicas.Get(topic, 0).Log().Read(offset, 1<<20, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := slice.ReadInto(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.ParseHeader(stored)
	if err != nil {
		t.Fatal(err)
	}
	h, recs, err := batch.ReadRecords(stored[:h.Size()], batch.MustCodecs())
	if err != nil {
		t.Fatal(err)
	}
	return h, recs
}

// TestProduceLegacyMessageSets: Produce v0-2 carry magic 0/1 message sets,
// which Kafka 3.9 still serves (and librdkafka before 2.11.1 needs Produce
// v0 advertised to compress at all). Each set is stored as one v2 batch
// with its codec and records, offsets continue across versions, and each
// response has its version's shape.
func TestProduceLegacyMessageSets(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("legacy", 1, nil)
	now := time.Now().UnixMilli()
	cases := []struct {
		version int16
		magic   int8
		codec   batch.Compression
	}{
		{0, 0, batch.None}, {0, 0, batch.Gzip}, {1, 0, batch.Snappy}, {1, 0, batch.LZ4},
		{2, 1, batch.None}, {2, 1, batch.Gzip}, {2, 1, batch.Snappy}, {2, 1, batch.LZ4},
	}
	next := int64(0)
	for _, tc := range cases {
		what := fmt.Sprintf("Produce v%d magic %d %s", tc.version, tc.magic, tc.codec)
		msgs := legacyMessages(now)
		set, err := testutil.LegacyMessageSet(tc.magic, int8(tc.codec), msgs, func(b []byte) ([]byte, error) {
			return batch.MustCodecs().Compress(nil, b, tc.codec)
		})
		if err != nil {
			t.Fatal(err)
		}
		resp := legacyProduce(t, tb, tc.version, "legacy", set)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != 0 || sp.BaseOffset != next || (tc.version >= 2 && sp.LogAppendTime != -1) {
			t.Fatalf("%s: code %d (%v) base offset %d log_append_time %d, want 0 at %d, -1", what, sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, sp.LogAppendTime, next)
		}
		h, recs := storedBatch(t, tb, "legacy", next)
		if h.Magic != batch.MagicV2 || h.Compression() != tc.codec || h.BaseOffset != next || len(recs) != len(msgs) {
			t.Fatalf("%s: stored magic %d codec %s base %d with %d records, want magic 2 %s at %d with %d",
				what, h.Magic, h.Compression(), h.BaseOffset, len(recs), tc.codec, next, len(msgs))
		}
		for i, r := range recs {
			ts := int64(-1) // magic 0 has no timestamp
			if tc.magic == 1 {
				ts = msgs[i].Timestamp
			}
			got := h.BaseTimestamp + r.TimestampDelta
			if r.OffsetDelta != int32(i) || got != ts || string(r.Key) != string(msgs[i].Key) || (r.Key == nil) != (msgs[i].Key == nil) ||
				string(r.Value) != string(msgs[i].Value) || (r.Value == nil) != (msgs[i].Value == nil) {
				t.Errorf("%s: record %d = delta %d ts %d key %q value %q, want %d %d %q %q", what, i, r.OffsetDelta, got, r.Key, r.Value, i, ts, msgs[i].Key, msgs[i].Value)
			}
		}
		next += int64(len(msgs))
	}
}

// TestProduceLegacyRules: converted sets meet the topic's rules, with the
// codes Kafka gives: a keyless message on a compacted topic is
// INVALID_RECORD, a LogAppendTime topic answers v2 with its append time,
// and a corrupt message is CORRUPT_MESSAGE.
func TestProduceLegacyRules(t *testing.T) {
	tb := startBroker(t, nil)
	compact, logAppend := "compact", "LogAppendTime"
	tb.createTopic("legacy-compact", 1, map[string]*string{"cleanup.policy": &compact})
	tb.createTopic("legacy-lat", 1, map[string]*string{"message.timestamp.type": &logAppend})
	now := time.Now().UnixMilli()
	set, err := testutil.LegacyMessageSet(1, 0, legacyMessages(now), nil)
	if err != nil {
		t.Fatal(err)
	}
	sp := legacyProduce(t, tb, 2, "legacy-compact", set).Topics[0].Partitions[0]
	wantCode(t, "keyless on compacted", sp.ErrorCode, kerr.InvalidRecord)

	sp = legacyProduce(t, tb, 2, "legacy-lat", set).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 || sp.LogAppendTime < 0 {
		t.Fatalf("LogAppendTime topic: code %d log_append_time %d, want 0 and the append time", sp.ErrorCode, sp.LogAppendTime)
	}
	if h, _ := storedBatch(t, tb, "legacy-lat", 0); !h.LogAppendTime() || h.MaxTimestamp != sp.LogAppendTime {
		t.Fatalf("stored header %+v, want LogAppendTime %d", h, sp.LogAppendTime)
	}

	set[len(set)-1] ^= 1
	sp = legacyProduce(t, tb, 0, "legacy-lat", set).Topics[0].Partitions[0]
	wantCode(t, "bad crc", sp.ErrorCode, kerr.CorruptMessage)

	// Magic 0 has no timestamps (-1), which the bounds do not check;
	// magic 1 timestamps are checked like any other.
	minute := "60000"
	tb.createTopic("legacy-bounded", 1, map[string]*string{"message.timestamp.before.max.ms": &minute})
	old := []testutil.LegacyMessage{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1000}}
	v0, _ := testutil.LegacyMessageSet(0, 0, old, nil)
	if sp = legacyProduce(t, tb, 0, "legacy-bounded", v0).Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("magic 0 on a bounded topic: code %d offset %d, want accepted at 0", sp.ErrorCode, sp.BaseOffset)
	}
	v1, _ := testutil.LegacyMessageSet(1, 0, old, nil)
	wantCode(t, "magic 1 stamped 1970", legacyProduce(t, tb, 2, "legacy-bounded", v1).Topics[0].Partitions[0].ErrorCode, kerr.InvalidTimestamp)

	// Kafka does not hold v0-2 to legacy sets: a v2 batch is taken too.
	if sp = legacyProduce(t, tb, 2, "legacy-bounded", rawBatch(t, 2, 10, nil)).Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != 1 {
		t.Fatalf("v2 batch in Produce v2: code %d offset %d, want accepted at 1", sp.ErrorCode, sp.BaseOffset)
	}
}

// TestApiVersionsProduceFromV0: Produce is advertised from v0, as Kafka 3.9
// and 4.x do; librdkafka before 2.11.1 turns compression off otherwise.
func TestApiVersionsProduceFromV0(t *testing.T) {
	tb := startBroker(t, nil)
	resp := tb.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 0 {
			if k.MinVersion != 0 {
				t.Fatalf("Produce advertised from v%d, want v0", k.MinVersion)
			}
			return
		}
	}
	t.Fatal("Produce not advertised")
}

// TestProduceLegacyFromFranzGo: franz-go limited to Produce v0-2 writes its
// own message sets (magic 0, or 1 on v2), an encoder independent of the
// test's; what it produced is stored with its codec and reads back.
func TestProduceLegacyFromFranzGo(t *testing.T) {
	tb := startBroker(t, nil)
	codecs := []struct {
		codec batch.Compression
		opt   kgo.CompressionCodec
	}{{batch.None, kgo.NoCompression()}, {batch.Gzip, kgo.GzipCompression()}, {batch.Snappy, kgo.SnappyCompression()}, {batch.LZ4, kgo.Lz4Compression()}}
	for version := int16(0); version <= 2; version++ {
		for _, c := range codecs {
			topic := fmt.Sprintf("kgo-v%d-%s", version, c.codec)
			tb.createTopic(topic, 1, nil)
			versions := kversion.Stable()
			versions.SetMaxKeyVersion(0, version)
			cl := tb.client(kgo.MaxVersions(versions), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(c.opt),
				kgo.RequiredAcks(kgo.LeaderAck()), kgo.ProducerLinger(time.Minute), kgo.DefaultProduceTopic(topic))
			ts := time.UnixMilli(time.Now().UnixMilli())
			var recs []*kgo.Record
			for i := range 5 {
				recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("key", i)), Value: bytes.Repeat([]byte{'a' + byte(i)}, 200), Timestamp: ts})
			}
			// Linger holds them for one batch; Flush sends it.
			for _, r := range recs {
				cl.Produce(testContext(t), r, nil)
			}
			if err := cl.Flush(testContext(t)); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Offset < 0 || r.Partition != 0 {
					t.Fatalf("%s: record not acknowledged: %+v", topic, r)
				}
			}
			// franz-go may still send them in more than one request (a
			// slow client under -race): every stored batch must have the
			// codec, and together they hold the records in order.
			var stored []batch.Record
			var stamps []int64
			leo := tb.b.replicas.Get(topic, 0).Log().LogEndOffset()
			for off := int64(0); off < leo; {
				h, rs := storedBatch(t, tb, topic, off)
				if h.Compression() != c.codec || h.Magic != 2 {
					t.Fatalf("%s: batch at %d stored with codec %s magic %d, want %s magic 2", topic, off, h.Compression(), h.Magic, c.codec)
				}
				for _, r := range rs {
					stored = append(stored, r)
					stamps = append(stamps, h.BaseTimestamp+r.TimestampDelta)
				}
				off = h.LastOffset() + 1
			}
			if len(stored) != len(recs) {
				t.Fatalf("%s: %d records stored, want %d", topic, len(stored), len(recs))
			}
			for i, r := range stored {
				wantTs := int64(-1)
				if version == 2 {
					wantTs = ts.UnixMilli()
				}
				if !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) || stamps[i] != wantTs {
					t.Errorf("%s: record %d = %q/%d bytes at %d, want %q at %d", topic, i, r.Key, len(r.Value), stamps[i], recs[i].Key, wantTs)
				}
			}
		}
	}
}
