#!/usr/bin/env bash
# Same tool as Apache Kafka's TransactionalMessageCopier (the system tests'
# copier, run by kafka-run-class.sh), run from the cached jars.
exec "$(dirname "$(readlink -f "$0")")/kafka-run-class.sh" org.apache.kafka.tools.TransactionalMessageCopier "$@"
