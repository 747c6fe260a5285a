package projections

import (
	"context"
	"errors"
	"log/slog"

	"github.com/engram-memory/engram/domain"
)

// indexWrites queues an index projection's writes while its state
// transaction runs; they are made just before the commit (see
// domain.KeywordState). Consecutive upserts go in one call, so a batch
// of creations is one request to a remote index.
type indexWrites struct {
	ops []indexOp
}

// indexOp is one queued write: docs or points to upsert, or another call.
type indexOp struct {
	docs   []domain.KeywordDocument
	points []domain.VectorPoint
	call   func(context.Context) error
}

func (w *indexWrites) upsertDocs(d domain.KeywordDocument) {
	if n := len(w.ops); n > 0 && w.ops[n-1].docs != nil {
		w.ops[n-1].docs = append(w.ops[n-1].docs, d)
		return
	}
	w.ops = append(w.ops, indexOp{docs: []domain.KeywordDocument{d}})
}

func (w *indexWrites) upsertPoints(p domain.VectorPoint) {
	if n := len(w.ops); n > 0 && w.ops[n-1].points != nil {
		w.ops[n-1].points = append(w.ops[n-1].points, p)
		return
	}
	w.ops = append(w.ops, indexOp{points: []domain.VectorPoint{p}})
}

func (w *indexWrites) do(call func(context.Context) error) {
	w.ops = append(w.ops, indexOp{call: call})
}

// flush makes the writes in order. A vector the index can never take
// (domain.ErrIndexRejected) is logged and left out rather than retried
// for ever; any other error stops the flush and fails the batch, which
// the engine then retries from the unchanged checkpoint.
func (w *indexWrites) flush(ctx context.Context, keyword domain.KeywordIndex, vectors domain.VectorIndex, logger *slog.Logger) error {
	for _, op := range w.ops {
		var err error
		switch {
		case op.docs != nil:
			err = keyword.UpsertDocuments(ctx, op.docs...)
		case op.points != nil:
			err = vectors.UpsertVectors(ctx, op.points...)
		default:
			err = op.call(ctx)
		}
		if errors.Is(err, domain.ErrIndexRejected) && !errors.Is(err, domain.ErrIndexUnavailable) && ctx.Err() == nil {
			logger.Warn("index left out items it cannot take", "error", err)
			err = nil
		}
		if err != nil {
			return err
		}
	}
	w.ops = w.ops[:0]
	return nil
}
