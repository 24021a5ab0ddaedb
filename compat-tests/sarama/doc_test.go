// Package sarama_test runs IBM/sarama against a Brook broker, once with
// sarama's default config Version and once with the newest Kafka version it
// knows: sarama >= 1.41 sends exactly the request versions of the release
// it is configured for, so each Version exercises a different set of them.
//
// It is its own Go module so that Brook's go.mod never depends on sarama.
package sarama_test
