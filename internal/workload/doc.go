// Package workload is the client side of Brook's process-level fault
// tests (tests/cluster's chaos tests, tests/interop's mixed cluster): an
// idempotent acks=all writer, a concurrent reader, a consumer group that
// commits, and the checkers that decide a run from what they saw: no
// acknowledged record lost, no duplicate, no reordering, no committed
// offset going back.
package workload
