package batch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// More sentinel errors; ErrTruncated, ErrCorrupt and ErrUnsupportedMagic live
// in header.go. An error may wrap two of them (an invalid record found
// because the input ended early wraps ErrInvalidRecord and ErrTruncated);
// KafkaCode decides which one names the Kafka error.
var (
	// ErrInvalidRecord: the batch is well framed but breaks a rule of the
	// format or of the topic (INVALID_RECORD).
	ErrInvalidRecord = errors.New("batch: invalid record")
	// ErrInvalidTimestamp: a record timestamp is outside the topic's
	// message.timestamp.{before,after}.max.ms window, or the producer set
	// LogAppendTime itself (INVALID_TIMESTAMP).
	ErrInvalidTimestamp = errors.New("batch: invalid timestamp")
	// ErrMessageTooLarge: the batch is larger than max.message.bytes, or its
	// records decompress past the configured bound (MESSAGE_TOO_LARGE).
	ErrMessageTooLarge = errors.New("batch: message too large")
	// ErrUnsupportedCompression: unknown codec id, or zstd in a Produce
	// request older than v7 (UNSUPPORTED_COMPRESSION_TYPE).
	ErrUnsupportedCompression = errors.New("batch: unsupported compression type")
)

// KafkaCode maps an error of this package to the Kafka error code a produce
// response carries for it: 0 for nil, UNKNOWN_SERVER_ERROR for errors this
// package does not know.
func KafkaCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, ErrUnsupportedMagic):
		// Produce v3+ accepts only magic 2; Kafka answers INVALID_RECORD.
		return kerr.InvalidRecord.Code
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrTruncated):
		return kerr.CorruptMessage.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

// RecordError is one record's failure, as Produce v8+ reports it in
// record_errors: the record's index in the batch and a message.
type RecordError struct {
	BatchIndex int32
	Message    string
}

// RecordErrors is returned when the batch is well formed but some records
// break the topic's rules (missing key on a compacted topic, timestamp out of
// range). Kafka rejects the whole batch and lists every failing record; the
// partition's error is INVALID_TIMESTAMP if any record failed on its
// timestamp, else INVALID_RECORD. Cause is ErrInvalidTimestamp or
// ErrInvalidRecord accordingly.
type RecordErrors struct {
	Cause error
	// Records lists the failing records in batch order, the first
	// MaxRecordErrors of them; Total counts them all.
	Records []RecordError
	Total   int
}

// MaxRecordErrors bounds the records a RecordErrors lists, and so the
// memory and response size one rejected batch can cost. Kafka lists them
// all; 10000 covers librdkafka's default batch.num.messages, beyond which a
// client is told about the first ones only.
const MaxRecordErrors = 10000

func (e *RecordErrors) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%v: %d record(s) rejected", e.Cause, e.Total)
	for i, r := range e.Records {
		if i == 3 {
			sb.WriteString("; ...")
			break
		}
		fmt.Fprintf(&sb, "; record %d: %s", r.BatchIndex, r.Message)
	}
	return sb.String()
}

func (e *RecordErrors) Unwrap() error { return e.Cause }

// invalidf builds an ErrInvalidRecord error with context.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, args...))
}
