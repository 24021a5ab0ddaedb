package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const kmsgDynamicTopic = kmsg.ConfigSourceDynamicTopicConfig

func TestDescribeLogDirs(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("dirs", 2, nil)
	produceN(t, tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "dirs", 2, 100, true)
	dirs, err := tb.admin().DescribeAllLogDirs(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			t.Fatalf("dir %s: %v", d.Dir, d.Err)
		}
		if d.Dir != tb.dir {
			t.Fatalf("dir %q, want %q", d.Dir, tb.dir)
		}
		for p := range int32(2) {
			lp, ok := d.Topics.Lookup("dirs", p)
			if !ok {
				t.Fatalf("partition %d missing from %s", p, d.Dir)
			}
			sizes = append(sizes, lp.Size)
		}
	})
	if len(sizes) != 2 || sizes[0] <= 0 || sizes[1] <= 0 {
		t.Fatalf("partition sizes %v, want two positive sizes", sizes)
	}
}

func TestTopicConfigsAlterDescribeAndApply(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("cfg", 1, nil)
	ctx := testContext(t)
	adm := tb.admin()
	v := "123456"
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &v}}, "cfg")
	if err == nil {
		err = resourceErr(res.On("cfg", nil))
	}
	if err != nil {
		t.Fatalf("alter: %v", err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != v || c.Source != kmsgDynamicTopic {
				t.Fatalf("retention.ms = %q from source %v, want %q from the topic", c.MaybeValue(), c.Source, v)
			}
		}
	}
	if !found || len(rc.Configs) < 20 {
		t.Fatalf("topic configs: %d entries, retention.ms found %v", len(rc.Configs), found)
	}
	if got := tb.b.replicas.Get("cfg", 0).Log().Config().RetentionMs; got != 123456 {
		t.Fatalf("log's retention.ms %d after the alter", got)
	}
	// A bad value is refused with INVALID_CONFIG and changes nothing.
	bad := "-7"
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: &bad}}, "cfg")
	if err == nil {
		err = resourceErr(res.On("cfg", nil))
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("segment.bytes=-7: %v, want INVALID_CONFIG", err)
	}
	// Deleting the override returns to the default.
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "cfg")
	if err == nil {
		err = resourceErr(res.On("cfg", nil))
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := tb.b.replicas.Get("cfg", 0).Log().Config().RetentionMs; got != 7*24*3600*1000 {
		t.Fatalf("log's retention.ms %d after deleting the override", got)
	}
	brokerCfgs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bc := range brokerCfgs {
		if bc.Err != nil || len(bc.Configs) < 50 {
			t.Fatalf("broker configs: %v, %d entries", bc.Err, len(bc.Configs))
		}
	}
}

func TestDeleteRecordsCreatePartitionsDeleteTopic(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("adm", 1, nil)
	produceN(t, tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "adm", 1, 50, true)
	ctx := testContext(t)
	adm := tb.admin()

	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "adm", Partition: 0, At: 20})
	dr, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dr.Lookup("adm", 0); d.Err != nil || d.LowWatermark != 20 {
		t.Fatalf("delete records: %+v", d)
	}
	starts, err := adm.ListStartOffsets(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("adm", 0); o.Offset != 20 {
		t.Fatalf("start offset %d after DeleteRecords, want 20", o.Offset)
	}
	offsets = kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "adm", Partition: 0, At: 51})
	dr, err = adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dr.Lookup("adm", 0); !errors.Is(d.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete past the high watermark: %v, want OFFSET_OUT_OF_RANGE", d.Err)
	}

	cp, err := adm.CreatePartitions(ctx, 2, "adm")
	if err == nil {
		var r kadm.CreatePartitionsResponse
		if r, err = cp.On("adm", nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "adm")
	if err != nil || len(md.Topics["adm"].Partitions) != 3 {
		t.Fatalf("partitions after CreatePartitions(+2): %v %d", err, len(md.Topics["adm"].Partitions))
	}
	oldID := md.Topics["adm"].ID

	del, err := adm.DeleteTopics(ctx, "adm")
	if err == nil {
		var r kadm.DeleteTopicResponse
		if r, err = del.On("adm", nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	tb.createTopic("adm", 1, nil)
	// A new client: kgo answers Metadata for known topics from its cache.
	md, err = tb.admin().Metadata(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	if md.Topics["adm"].ID == oldID || len(md.Topics["adm"].Partitions) != 1 {
		t.Fatalf("re-created topic: id %v (old %v), %d partitions", md.Topics["adm"].ID, oldID, len(md.Topics["adm"].Partitions))
	}
	// The re-created topic starts empty, at offset 0.
	ends, err := adm.ListEndOffsets(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("adm", 0); o.Offset != 0 {
		t.Fatalf("re-created topic ends at %d", o.Offset)
	}
}

func TestListOffsetsByTimestamp(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("ts", 1, nil)
	sent := produceN(t, tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "ts", 1, 1000, true)
	ctx := testContext(t)
	adm := tb.admin()
	for _, i := range []int{0, 1, 500, 999} {
		got, err := adm.ListOffsetsAfterMilli(ctx, sent[i].timestamp.UnixMilli(), "ts")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := got.Lookup("ts", 0); o.Offset != int64(i) {
			t.Fatalf("offset for the timestamp of record %d: %d", i, o.Offset)
		}
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, sent[999].timestamp.UnixMilli()+1, "ts")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := after.Lookup("ts", 0); o.Offset != 1000 {
		t.Fatalf("offset after the last timestamp: %d, want the end 1000", o.Offset)
	}
}

// resourceErr is the error of one AlterConfigs resource, or of looking it up.
func resourceErr(r kadm.AlterConfigsResponse, err error) error {
	if err != nil {
		return err
	}
	return r.Err
}

func TestDynamicBrokerConfigs(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("dyn", 1, nil)
	ctx := testContext(t)
	adm := tb.admin()
	v := "3600000"
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: &v}})
	if err == nil {
		err = resourceErr(res.On("", nil))
	}
	if err != nil {
		t.Fatalf("set the cluster default log.retention.ms: %v", err)
	}
	// Topics without an override follow the new default at once.
	if got := tb.b.replicas.Get("dyn", 0).Log().Config().RetentionMs; got != 3600000 {
		t.Fatalf("topic retention.ms %d after the dynamic default", got)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == "log.retention.ms" {
				found = true
				if c.MaybeValue() != v || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
					t.Fatalf("log.retention.ms = %q from %v, want %s from the dynamic default", c.MaybeValue(), c.Source, v)
				}
			}
		}
	}
	if !found {
		t.Fatal("log.retention.ms missing from the broker's configs")
	}
	// It survives a restart (it lives in the metadata store).
	tb.restart()
	// A single node serves clients once its partitions are set up.
	if _, err := tb.admin().ListTopics(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tb.b.replicas.Get("dyn", 0).Log().Config().RetentionMs; got != 3600000 {
		t.Fatalf("topic retention.ms %d after restart", got)
	}
	// Configs that only change with a restart are refused.
	port := "1234"
	res, err = tb.admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "broker.id", Value: &port}}, 0)
	if err == nil {
		err = resourceErr(res.On("0", nil))
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("dynamic broker.id: %v, want INVALID_CONFIG", err)
	}
}

func TestCreateTopicsValidateOnlyAndDeleteByID(t *testing.T) {
	tb := startBroker(t, nil)
	ctx := testContext(t)
	adm := tb.admin()
	r, err := adm.ValidateCreateTopics(ctx, 3, 1, nil, "checked")
	if err == nil {
		var one kadm.CreateTopicResponse
		if one, err = r.On("checked", nil); err == nil {
			err = one.Err
		}
	}
	if err != nil {
		t.Fatalf("validate-only create: %v", err)
	}
	if md, err := tb.admin().Metadata(ctx, "checked"); err == nil && md.Topics["checked"].Err == nil {
		t.Fatalf("validate-only create made the topic")
	}

	tb.createTopic("by-id", 1, nil)
	md, err := tb.admin().Metadata(ctx, "by-id")
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.TimeoutMillis = 10000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = md.Topics["by-id"].ID
	req.Topics = append(req.Topics, dt)
	resp := tb.roundTrip(req).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "by-id" {
		t.Fatalf("delete by id: %+v", resp.Topics[0])
	}
	dt.TopicID = [16]byte{1, 2, 3}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{dt}
	wantCode(t, "delete by unknown id", tb.roundTrip(req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.UnknownTopicID)

	// Clients may not delete internal topics.
	req.SetVersion(5)
	req.Topics, req.TopicNames = nil, []string{"__consumer_offsets"}
	wantCode(t, "delete __consumer_offsets", tb.roundTrip(req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.InvalidTopicException)
}
