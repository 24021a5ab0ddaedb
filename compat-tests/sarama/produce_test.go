package sarama_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// readPartition reads partition p of topic from the oldest offset until it
// has n messages, failing after a deadline.
func readPartition(t *testing.T, addr string, version sarama.KafkaVersion, topic string, p int32, n int) []*sarama.ConsumerMessage {
	t.Helper()
	consumer, err := sarama.NewConsumer([]string{addr}, newConfig(t, version))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition %s/%d: %v", topic, p, err)
	}
	defer pc.Close()
	var got []*sarama.ConsumerMessage
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			got = append(got, m)
		case err := <-pc.Errors():
			t.Fatalf("consume %s/%d: %v", topic, p, err)
		case <-timeout:
			t.Fatalf("consume %s/%d: %d of %d messages after 30s", topic, p, len(got), n)
		}
	}
	return got
}

func testSyncProducer(t *testing.T, addr string, version sarama.KafkaVersion) {
	const topic, partitions, perPartition = "sarama-sync", 2, 10
	createTopic(t, newAdmin(t, addr, version), topic, partitions)

	cfg := newConfig(t, version)
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer producer.Close()

	for i := range perPartition {
		for p := range int32(partitions) {
			msg := &sarama.ProducerMessage{
				Topic:     topic,
				Partition: p,
				Key:       sarama.StringEncoder(fmt.Sprintf("k%d-%d", p, i)),
				Value:     sarama.StringEncoder(fmt.Sprintf("v%d-%d", p, i)),
				Headers:   []sarama.RecordHeader{{Key: []byte("seq"), Value: []byte(fmt.Sprint(i))}},
			}
			gotP, off, err := producer.SendMessage(msg)
			if err != nil {
				t.Fatalf("SendMessage %d to partition %d: %v", i, p, err)
			}
			// Offsets of a new topic start at 0 and are contiguous.
			if gotP != p || off != int64(i) {
				t.Fatalf("SendMessage %d to partition %d: landed at %d/%d, want %d/%d", i, p, gotP, off, p, i)
			}
		}
	}

	// A batch through SendMessages lands after them.
	batch := []*sarama.ProducerMessage{
		{Topic: topic, Partition: 0, Value: sarama.StringEncoder("batch-a")},
		{Topic: topic, Partition: 0, Value: sarama.StringEncoder("batch-b")},
	}
	if err := producer.SendMessages(batch); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
	if batch[0].Offset != perPartition || batch[1].Offset != perPartition+1 {
		t.Errorf("SendMessages offsets %d, %d, want %d, %d", batch[0].Offset, batch[1].Offset, perPartition, perPartition+1)
	}

	for p := range int32(partitions) {
		msgs := readPartition(t, addr, version, topic, p, perPartition)
		for i, m := range msgs[:perPartition] {
			wantKey, wantVal := fmt.Sprintf("k%d-%d", p, i), fmt.Sprintf("v%d-%d", p, i)
			hdr := ""
			if len(m.Headers) == 1 && string(m.Headers[0].Key) == "seq" {
				hdr = string(m.Headers[0].Value)
			}
			if m.Offset != int64(i) || string(m.Key) != wantKey || string(m.Value) != wantVal || hdr != fmt.Sprint(i) {
				t.Errorf("partition %d message %d: offset %d key %q value %q headers %v, want %d %q %q seq=%d",
					p, i, m.Offset, m.Key, m.Value, headerStrings(m.Headers), i, wantKey, wantVal, i)
			}
		}
	}
}

// testAsyncProducerCompression sends through an AsyncProducer with each
// codec sarama has, and reads the records back.
func testAsyncProducerCompression(t *testing.T, addr string, version sarama.KafkaVersion) {
	const n = 200
	admin := newAdmin(t, addr, version)
	codecs := []sarama.CompressionCodec{
		sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy,
		sarama.CompressionLZ4, sarama.CompressionZSTD,
	}
	for _, codec := range codecs {
		t.Run(codec.String(), func(t *testing.T) {
			topic := "sarama-async-" + codec.String()
			createTopic(t, admin, topic, 1)
			cfg := newConfig(t, version)
			cfg.Producer.Compression = codec
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Return.Successes = true
			// Batches of several records, so the codec has something to do.
			cfg.Producer.Flush.Messages = 50
			cfg.Producer.Flush.Frequency = 20 * time.Millisecond
			producer, err := sarama.NewAsyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("NewAsyncProducer: %v", err)
			}
			go func() {
				for i := range n {
					producer.Input() <- &sarama.ProducerMessage{Topic: topic,
						Key:   sarama.StringEncoder(fmt.Sprint(i)),
						Value: sarama.StringEncoder(value(i))}
				}
			}()
			offsets := map[int64]bool{}
			timeout := time.After(30 * time.Second)
			for len(offsets) < n {
				select {
				case m := <-producer.Successes():
					offsets[m.Offset] = true
				case err := <-producer.Errors():
					t.Fatalf("AsyncProducer %s: %v", codec, err)
				case <-timeout:
					t.Fatalf("AsyncProducer %s: %d of %d acks after 30s", codec, len(offsets), n)
				}
			}
			if err := producer.Close(); err != nil {
				t.Fatalf("AsyncProducer close: %v", err)
			}
			for i := range int64(n) {
				if !offsets[i] {
					t.Fatalf("acked offsets lack %d (want 0..%d each once)", i, n-1)
				}
			}
			// One partition and one in-flight request keep input order.
			for i, m := range readPartition(t, addr, version, topic, 0, n) {
				if string(m.Key) != fmt.Sprint(i) || string(m.Value) != value(i) {
					t.Fatalf("offset %d: key %q value %.20q..., want %d %.20q...", m.Offset, m.Key, m.Value, i, value(i))
				}
			}
		})
	}
}

// value is a compressible record value that still differs per record.
func value(i int) string { return fmt.Sprintf("%d:%s", i, strings.Repeat("brook ", 30)) }

func headerStrings(hs []*sarama.RecordHeader) []string {
	var out []string
	for _, h := range hs {
		out = append(out, string(h.Key)+"="+string(h.Value))
	}
	return out
}
