// Package logging gives the broker named loggers whose levels change at
// runtime, as Kafka's log4j loggers do through the BROKER_LOGGER config
// resource (kafka-configs --entity-type broker-loggers): DescribeConfigs
// lists every logger with its effective level, IncrementalAlterConfigs
// SETs a logger's level or DELETEs it, after which it inherits again.
//
// Names are dotted and inherit like log4j's: a logger without a level of
// its own takes that of its nearest named ancestor ("kafka.server" for
// "kafka.server.ReplicaManager"), and at last that of "root", which always
// has one. Levels are Kafka's: TRACE, DEBUG, INFO, WARN, ERROR, FATAL.
// Brook writes no record above ERROR, so FATAL silences a logger.
package logging
