"""kafka-python over an SSL listener with a client certificate: an admin
call, an acks=all produce and a consume, the broker's host name checked.

Prints one JSON object on stdout; the Go test checks it.

usage: ssl_scenario.py BOOTSTRAP CAFILE CERTFILE KEYFILE TOPIC
(PY_KAFKA_LOG=1 in the environment logs kafka-python at DEBUG on stderr)
"""
import json
import logging
import os
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic


def main():
    if os.environ.get("PY_KAFKA_LOG"):
        logging.basicConfig(level=logging.DEBUG)
    bootstrap, cafile, certfile, keyfile, topic = sys.argv[1:6]
    ssl = dict(security_protocol="SSL", ssl_cafile=cafile, ssl_certfile=certfile,
               ssl_keyfile=keyfile, ssl_check_hostname=True)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="brook-compat-py-ssl", **ssl)
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    topics = sorted(admin.list_topics())
    admin.close()

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **ssl)
    offsets = []
    for i in range(3):
        md = producer.send(topic, key=b"k%d" % i, value=b"secret %d" % i).get(timeout=60)
        offsets.append(md.offset)
    producer.close()

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=30000, **ssl)
    read = []
    for msg in consumer:
        read.append([msg.offset, msg.key.decode(), msg.value.decode()])
        if len(read) == 3:
            break
    consumer.close()
    print(json.dumps({"topics": topics, "offsets": offsets, "read": read}))


if __name__ == "__main__":
    main()
