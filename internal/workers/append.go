package workers

import (
	"context"

	"github.com/engram-memory/engram/domain"
)

// appendInParts appends payloads to stream in order, in as few appends as
// the event store takes: a batch the store refuses as too large
// (event_batch_too_large, e.g. over KurrentDB's MaxAppendSize) is split in
// halves, down to one event. Only for writes whose atomicity nobody was
// promised: vectors from the embed queue and from re-embedding job steps.
// Each part lands whole and in order, so a failure part-way leaves a prefix
// written; the job cursor then stands after that prefix, and a retry that
// records it again counts nothing twice (the cursor only moves forward).
func appendInParts(ctx context.Context, w Writer, stream string, meta domain.Metadata, payloads []domain.Payload) error {
	_, err := w.Append(ctx, stream, domain.ExpectAny, meta, payloads...)
	if len(payloads) < 2 || !batchTooLarge(err) {
		return err
	}
	half := len(payloads) / 2
	if err := appendInParts(ctx, w, stream, meta, payloads[:half]); err != nil {
		return err
	}
	return appendInParts(ctx, w, stream, meta, payloads[half:])
}

// batchTooLarge tells the event store's refusal of an append by its size,
// which it makes before writing anything.
func batchTooLarge(err error) bool {
	e, ok := domain.AsError(err)
	return ok && e.Kind == domain.KindTooLarge && e.PublicCode() == "event_batch_too_large"
}
