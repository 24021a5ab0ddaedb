"""kafka-python over SASL_PLAINTEXT (or SASL_SSL) against Brook, one
mechanism per run.

Usage: sasl.py BOOTSTRAP MECHANISM USER PASSWORD TOPIC [CAFILE]

With CAFILE the listener is SASL_SSL: the broker's certificate is checked
against that CA, and its host name against the certificate.

Creates TOPIC with the admin client, produces one record with acks=all,
reads it back, and prints a JSON report; a wrong password must fail with
an authentication error (checked by the caller with a second run).
"""
import base64
import json
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.sasl.oauth import AbstractTokenProvider


class UnsecuredToken(AbstractTokenProvider):
    """An unsigned JWS, as Kafka's unsecured OAUTHBEARER login makes."""

    def __init__(self, sub):
        self.sub = sub

    def token(self):
        enc = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
        claims = json.dumps({"sub": self.sub, "exp": int(time.time()) + 3600}).encode()
        return enc(b'{"alg":"none"}') + "." + enc(claims) + "."


def main():
    bootstrap, mechanism, user, password, topic = sys.argv[1:6]
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism}
    if len(sys.argv) > 6:
        sasl.update(security_protocol="SASL_SSL", ssl_cafile=sys.argv[6], ssl_check_hostname=True)
    if mechanism == "OAUTHBEARER":
        sasl["sasl_oauth_token_provider"] = UnsecuredToken(user)
    else:
        sasl["sasl_plain_username"] = user
        sasl["sasl_plain_password"] = password
    report = {}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000, **sasl)
    admin.create_topics([NewTopic(topic, 1, 1)])
    report["topics"] = sorted(admin.list_topics())
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **sasl)
    meta = producer.send(topic, b"value-" + mechanism.encode()).get(timeout=60)
    report["offset"] = meta.offset
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=30000, **sasl)
    report["read"] = []
    for r in consumer:
        report["read"].append(r.value.decode())
        break
    consumer.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
