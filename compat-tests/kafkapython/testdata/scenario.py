"""kafka-python against one broker: admin, producer per codec, a consumer
group of two members, commits, and the group's offsets through the admin.

Prints one JSON object on stdout with what it observed; the Go test checks
it. Waits are bounded loops, and a step that cannot finish raises, so the
script exits non-zero with a traceback on stderr.

usage: scenario.py BOOTSTRAP CODEC...
"""
import json
import sys
import threading
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka import codec as kcodec

WAIT_S = 60
GROUP_TOPIC, GROUP_PARTITIONS, PER_PARTITION = "py-group", 4, 5
GROUP = "py-group-g"
CODEC_RECORDS = 50


def wait_for(what, cond, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("after %ss: %s" % (timeout, what))
        time.sleep(0.05)


def produce(bootstrap, topic, codec, records):
    """Sends (partition, key, value, headers) tuples with acks=all and
    returns [partition, offset] per record, in order."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=5, client_id="brook-compat-py-producer")
    futures = [producer.send(topic, partition=p, key=k, value=v, headers=h)
               for p, k, v, h in records]
    producer.flush()
    metas = [f.get(timeout=WAIT_S) for f in futures]
    producer.close()
    return [[m.partition, m.offset] for m in metas]


def read_all(bootstrap, topic, partition, n):
    """Reads n records of one partition from offset 0 without a group."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             client_id="brook-compat-py-reader")
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < n and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=500).values():
            got.extend(recs)
    consumer.close()
    return [{"offset": r.offset, "key": r.key.decode(), "value": r.value.decode(),
             "headers": [[k, v.decode()] for k, v in r.headers]} for r in got]


class Member(threading.Thread):
    """One KafkaConsumer of the group, polling until stopped."""

    def __init__(self, bootstrap, name):
        super().__init__(daemon=True)
        self.name_ = name
        self.consumer = KafkaConsumer(
            GROUP_TOPIC, bootstrap_servers=bootstrap, group_id=GROUP,
            client_id="brook-compat-py-" + name, enable_auto_commit=False,
            auto_offset_reset="earliest", heartbeat_interval_ms=300)
        self.lock = threading.Lock()
        self.assignment = []
        self.records = []
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                batch = self.consumer.poll(timeout_ms=100)
                with self.lock:
                    self.assignment = sorted(tp.partition for tp in self.consumer.assignment())
                    for recs in batch.values():
                        self.records.extend([r.partition, r.offset, r.value.decode()] for r in recs)
            self.consumer.commit()
        except Exception as e:  # reported by finish()
            self.error = e
        finally:
            self.consumer.close()

    def snapshot(self):
        with self.lock:
            return list(self.assignment), list(self.records)

    def finish(self):
        self.stop.set()
        self.join(WAIT_S)
        if self.is_alive():
            raise TimeoutError("member %s did not stop" % self.name_)
        if self.error is not None:
            raise RuntimeError("member %s: %r" % (self.name_, self.error))


def group_records(n):
    return [(p, None, ("%d-%d" % (p, i)).encode(), [])
            for p in range(GROUP_PARTITIONS) for i in range(n)]


def run_group(bootstrap, out):
    a, b = Member(bootstrap, "a"), Member(bootstrap, "b")
    a.start()
    b.start()

    def split():
        pa, pb = a.snapshot()[0], b.snapshot()[0]
        return pa and pb and sorted(pa + pb) == list(range(GROUP_PARTITIONS))
    wait_for("two members split the partitions", split)
    # Records go in only once the split is stable, so each is read by the
    # member that owns its partition.
    produce(bootstrap, GROUP_TOPIC, "none", group_records(PER_PARTITION))
    total = GROUP_PARTITIONS * PER_PARTITION
    wait_for("the group reads %d records" % total,
             lambda: len(a.snapshot()[1]) + len(b.snapshot()[1]) >= total)
    a.finish()
    b.finish()
    out["members"] = {m.name_: {"assignment": m.snapshot()[0], "records": m.snapshot()[1]}
                      for m in (a, b)}

    # A second run of the group reads nothing: all is committed. It polls a
    # bounded while once it holds partitions, then reads only a new record.
    c = Member(bootstrap, "c")
    c.start()
    wait_for("second run gets all partitions",
             lambda: len(c.snapshot()[0]) == GROUP_PARTITIONS)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not c.snapshot()[1]:
        time.sleep(0.05)
    out["second_run_before_new"] = c.snapshot()[1]
    produce(bootstrap, GROUP_TOPIC, "none", [(1, None, b"late", [])])
    wait_for("second run reads the new record", lambda: len(c.snapshot()[1]) >= 1)
    c.finish()
    out["second_run"] = c.snapshot()[1]


def main():
    bootstrap, codecs = sys.argv[1], sys.argv[2:]
    out = {"kafka_python": kafka.__version__,
           "codecs_available": {"gzip": kcodec.has_gzip(), "snappy": kcodec.has_snappy(),
                                "lz4": kcodec.has_lz4(), "zstd": kcodec.has_zstd()}}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="brook-compat-py-admin")
    out["api_version"] = list(admin.config["api_version"])
    topics = [NewTopic(GROUP_TOPIC, GROUP_PARTITIONS, 1)]
    topics += [NewTopic("py-" + c, 2, 1) for c in codecs]
    admin.create_topics(topics)
    wait_for("topics listed", lambda: {t.name for t in topics} <= set(admin.list_topics()))

    out["codecs"] = {}
    for c in codecs:
        topic = "py-" + c
        recs = [(i % 2, ("k%d" % i).encode(), ("%s-%d-" % (c, i) + "x" * 200).encode(),
                 [("seq", str(i).encode()), ("codec", c.encode())])
                for i in range(CODEC_RECORDS)]
        acks = produce(bootstrap, topic, c, recs)
        out["codecs"][c] = {"acks": acks,
                            "read": [read_all(bootstrap, topic, p, CODEC_RECORDS // 2) for p in range(2)]}

    run_group(bootstrap, out)
    offsets = admin.list_consumer_group_offsets(GROUP)
    out["group_offsets"] = {"%s/%d" % (tp.topic, tp.partition): om.offset for tp, om in offsets.items()}
    out["groups"] = [g[0] for g in admin.list_consumer_groups()]
    admin.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
