package broker

// DescribeLogDirs, key 35, versions 0-4.
//
// Lists each log dir with the hosted partitions in it and their sizes; a
// null topic list asks for every partition. A replica being moved to
// another dir (AlterReplicaLogDirs) is also listed there with is_future
// and its offset lag behind the current log end; current replicas have
// lag 0. v2 is flexible, v3 adds a top-level error code,
// v4 the dir's total and usable bytes. A log dir that failed is listed
// with KAFKA_STORAGE_ERROR and no partitions, as Kafka does.

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

func (b *Broker) handleDescribeLogDirs(_ context.Context, r *request, req *kmsg.DescribeLogDirsRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	want := func(log.TopicPartition) bool { return true }
	if req.Topics != nil {
		asked := map[log.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				asked[log.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
		want = func(tp log.TopicPartition) bool { return asked[tp] }
	}
	byDir := map[string]map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for tp, l := range b.logs.All() {
		if !want(tp) {
			continue
		}
		dir := filepath.Dir(l.Dir())
		if byDir[dir] == nil {
			byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size = tp.Partition, l.Size()
		byDir[dir][tp.Topic] = append(byDir[dir][tp.Topic], p)
	}
	for tp, fut := range b.logs.Futures() {
		cur := b.logs.Get(tp)
		if !want(tp) || cur == nil {
			continue
		}
		dir := filepath.Dir(fut.Dir())
		if byDir[dir] == nil {
			byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size, p.IsFuture = tp.Partition, fut.Size(), true
		p.OffsetLag = max(cur.LogEndOffset()-fut.LogEndOffset(), 0)
		byDir[dir][tp.Topic] = append(byDir[dir][tp.Topic], p)
	}
	for _, dir := range b.cfg.LogDirs {
		d := kmsg.NewDescribeLogDirsResponseDir()
		d.Dir = dir
		if !b.logs.IsDirOnline(dir) {
			// As Kafka: a failed dir is listed with its error, no replicas.
			d.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, d)
			continue
		}
		d.TotalBytes, d.UsableBytes = diskSpace(dir)
		topics := byDir[filepath.Clean(dir)]
		for _, name := range slices.Sorted(maps.Keys(topics)) {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = name
			t.Partitions = topics[name]
			slices.SortFunc(t.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int {
				if a.Partition != b.Partition {
					return int(a.Partition - b.Partition)
				}
				return boolInt(a.IsFuture) - boolInt(b.IsFuture)
			})
			d.Topics = append(d.Topics, t)
		}
		resp.Dirs = append(resp.Dirs, d)
	}
	return respond(resp)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// diskSpace reports a dir's file system size and free space, -1 if unknown.
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
}
