#!/usr/bin/env bash
# Same tool as Apache Kafka's bin/kafka-acls.sh, run from the cached jars.
exec "$(dirname "$(readlink -f "$0")")/kafka-run-class.sh" org.apache.kafka.tools.AclCommand,kafka.admin.AclCommand "$@"
