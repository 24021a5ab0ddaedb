package batch

import (
	"errors"
	"fmt"
	"io"
)

// ValidateOptions are the topic's rules a produced batch must meet. The zero
// value checks only what Kafka always checks.
type ValidateOptions struct {
	// MaxMessageBytes is max.message.bytes: the largest batch accepted,
	// counted as Kafka does over the whole batch (log overhead included).
	// Zero or less disables the check.
	MaxMessageBytes int32
	// KeyRequired is set for compacted topics: every record needs a key.
	KeyRequired bool
	// LogAppendTime is set when message.timestamp.type is LogAppendTime;
	// a producer may then not send LogAppendTime batches itself.
	LogAppendTime bool
	// CheckTimestamps enables message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms against NowMs, the broker's clock
	// (injected, never read here). Kafka checks them only for CreateTime
	// topics and records with a timestamp.
	CheckTimestamps      bool
	NowMs                int64
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
	// ProduceVersion, when nonzero, is the Produce request's version:
	// zstd needs v7 or later.
	ProduceVersion int16
	// MaxUncompressedBytes bounds how far the records may decompress
	// (zero or less: DefaultMaxUncompressedBytes).
	MaxUncompressedBytes int64
	// Codecs decompresses; nil makes a throwaway set, correct but slow.
	Codecs *Codecs
}

// uncompressedLimit is MaxUncompressedBytes, defaulted.
func (o *ValidateOptions) uncompressedLimit() int64 {
	if o.MaxUncompressedBytes <= 0 {
		return DefaultMaxUncompressedBytes
	}
	return o.MaxUncompressedBytes
}

// Result is what validation learnt about a valid batch.
type Result struct {
	Header
	// MaxTimestamp is the largest record timestamp (-1 if none is above
	// -1), and MaxTimestampIndex the index of the first record carrying it
	// (-1 if none). Kafka rewrites the batch's maxTimestamp with this value
	// for CreateTime topics (see SetMaxTimestamp).
	MaxTimestamp      int64
	MaxTimestampIndex int32
	// OffsetsInOrder reports whether offset deltas run 0..count-1. Kafka
	// does not reject other deltas: it rebuilds a compressed batch with
	// fresh ones (see Renumber) and stores an uncompressed one as is.
	OffsetsInOrder bool
	// UncompressedBytes is the size of the records section uncompressed.
	UncompressedBytes int64
}

// Validate checks that b holds exactly one complete, well-formed v2 batch as
// a producer sent it: header, CRC, and (streaming through any compression)
// every inner record. It returns the header. Errors map to Kafka codes with
// KafkaCode; per-record failures come as *RecordErrors.
func Validate(b []byte, opts ValidateOptions) (Header, error) {
	res, err := Check(b, opts)
	return res.Header, err
}

// Check is Validate returning everything learnt about the batch. The checks
// run in the order Kafka makes them (ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords, LogValidator), so that a batch with
// several faults gets the error Kafka would give.
func Check(b []byte, opts ValidateOptions) (Result, error) {
	res := Result{MaxTimestamp: -1, MaxTimestampIndex: -1}
	h, err := checkFraming(b, opts)
	res.Header = h
	if err != nil {
		return res, err
	}
	if err := checkBatch(b, &h, opts); err != nil {
		return res, err
	}
	err = checkRecords(b, &h, opts, &res)
	return res, err
}

// checkFraming checks that b is exactly one v2 batch whose codec the
// request may use.
func checkFraming(b []byte, opts ValidateOptions) (Header, error) {
	h, err := ParseHeader(b)
	switch {
	case errors.Is(err, ErrTruncated):
		// Kafka's batch iterator finds no batch in a short buffer.
		return h, fmt.Errorf("%w: %w: %d bytes hold no complete batch", ErrInvalidRecord, ErrTruncated, len(b))
	case errors.Is(err, ErrUnsupportedMagic) && (h.Magic < 0 || h.Magic > MagicV2):
		// Kafka's batch iterator calls an unknown magic corruption; only
		// the older magics 0 and 1 are "wrong for this request version".
		return h, fmt.Errorf("%w: unknown magic %d", ErrCorrupt, h.Magic)
	case err != nil:
		return h, err
	}
	if len(b) < h.Size() {
		return h, fmt.Errorf("%w: %w: batch of %d bytes, %d present", ErrInvalidRecord, ErrTruncated, h.Size(), len(b))
	}
	codec := h.Compression()
	if !codec.Valid() {
		return h, fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(codec))
	}
	if codec == Zstd && opts.ProduceVersion > 0 && opts.ProduceVersion < 7 {
		return h, fmt.Errorf("%w: zstd needs Produce v7+, got v%d", ErrUnsupportedCompression, opts.ProduceVersion)
	}
	if rest := b[h.Size():]; len(rest) > 0 {
		if _, err := ParseHeader(rest); err == nil {
			return h, invalidf("more than one record batch")
		}
		return h, invalidf("%d bytes after the record batch", len(rest))
	}
	return h, nil
}

// checkBatch applies the batch-level rules for appends from clients.
func checkBatch(b []byte, h *Header, opts ValidateOptions) error {
	if h.BaseOffset != 0 {
		return invalidf("base offset of a produced batch should be 0, but it is %d", h.BaseOffset)
	}
	if opts.MaxMessageBytes > 0 && h.Size() > int(opts.MaxMessageBytes) {
		return fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, h.Size(), opts.MaxMessageBytes)
	}
	if err := CheckCRC(b, h); err != nil {
		return err
	}
	if h.LastOffsetDelta < 0 {
		return invalidf("invalid offset range: last offset delta %d", h.LastOffsetDelta)
	}
	if h.RecordCount <= 0 {
		return invalidf("invalid reported record count %d", h.RecordCount)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.RecordCount) {
		return invalidf("offset range of %d records and record count %d differ", int64(h.LastOffsetDelta)+1, h.RecordCount)
	}
	if h.Control() {
		return invalidf("clients may not write control records")
	}
	if h.HasProducerID() && h.BaseSequence < 0 {
		return invalidf("invalid sequence %d with producer id %d", h.BaseSequence, h.ProducerID)
	}
	return nil
}

// checkRecords walks the records without keeping them, applying Kafka's
// record structure rules and the topic's rules on keys and timestamps. A
// raw snappy block is walked decoded, as a slice (initSnappyBlock); a
// fault of the records' structure found there is looked for again on the
// stream, so that the error is the stream's, word for word
// (TestSnappyBlockWalkMatchesStream).
func checkRecords(b []byte, h *Header, opts ValidateOptions, res *Result) error {
	limit := opts.uncompressedLimit()
	var r RecordReader
	if r.initSnappyBlock(b, h, opts.Codecs, limit) {
		before := *res
		err := walkRecords(&r, h, opts, res)
		r.Close()
		var recErrs *RecordErrors
		if err == nil || errors.As(err, &recErrs) {
			return err
		}
		*res = before
	}
	return checkRecordsStream(b, h, opts, res)
}

// checkRecordsStream is checkRecords through the ordinary reader.
func checkRecordsStream(b []byte, h *Header, opts ValidateOptions, res *Result) error {
	limit := opts.uncompressedLimit()
	var r RecordReader
	if err := r.init(b, opts.Codecs, limit); err != nil {
		return err
	}
	defer r.Close()
	return walkRecords(&r, h, opts, res)
}

// walkRecords is the walk of checkRecords over r: a fault of the records'
// structure is returned as the reader reports it, the topic's rules as
// *RecordErrors once every record was read.
func walkRecords(r *RecordReader, h *Header, opts ValidateOptions, res *Result) error {
	res.OffsetsInOrder = true
	// Without a key rule, a timestamp range or a timestamp type to refuse,
	// no record can break checkRecordRules: skip the call per record.
	rules := opts.KeyRequired || opts.CheckTimestamps || opts.LogAppendTime || h.LogAppendTime()
	var errs *RecordErrors
	for i := int32(0); ; i++ {
		rec, err := r.skip()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		hasKey := rec.hasKey
		if rec.offsetDelta != i {
			res.OffsetsInOrder = false
		}
		ts := h.BaseTimestamp + rec.timestampDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp
		}
		if ts > res.MaxTimestamp {
			res.MaxTimestamp, res.MaxTimestampIndex = ts, i
		}
		if !rules {
			continue
		}
		if msg, cause := checkRecordRules(h, hasKey, ts, opts); cause != nil {
			if errs == nil {
				errs = &RecordErrors{Cause: ErrInvalidRecord}
			}
			if cause == ErrInvalidTimestamp {
				errs.Cause = ErrInvalidTimestamp
			}
			errs.Total++
			if len(errs.Records) < MaxRecordErrors {
				errs.Records = append(errs.Records, RecordError{BatchIndex: i, Message: msg})
			}
		}
	}
	if r.src.r == nil {
		res.UncompressedBytes = int64(len(r.src.buf))
	} else {
		res.UncompressedBytes = r.src.n
	}
	if errs != nil {
		return errs
	}
	return nil
}

// checkRecordRules is Kafka's validateKey then validateTimestamp for one
// record whose timestamp is ts.
func checkRecordRules(h *Header, hasKey bool, ts int64, opts ValidateOptions) (string, error) {
	if opts.KeyRequired && !hasKey {
		return "compacted topic cannot accept a record without a key", ErrInvalidRecord
	}
	if !opts.LogAppendTime && ts != -1 {
		if !opts.CheckTimestamps {
			return "", nil
		}
		diff := opts.NowMs - ts
		if diff > opts.TimestampBeforeMaxMs || -diff > opts.TimestampAfterMaxMs {
			return fmt.Sprintf("timestamp %d is out of range [%d, %d]", ts,
				opts.NowMs-opts.TimestampBeforeMaxMs, opts.NowMs+opts.TimestampAfterMaxMs), ErrInvalidTimestamp
		}
		return "", nil
	}
	if h.LogAppendTime() {
		return "producer may not set the timestamp type to LogAppendTime", ErrInvalidTimestamp
	}
	return "", nil
}
