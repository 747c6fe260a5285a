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

// indexProjection is an index projection (keyword, vectors) as their one
// Apply (applyIndexed) sees it.
type indexProjection interface {
	// Load fills an in-process index from the state once.
	Load(ctx context.Context) error
	// applyTo applies events to the state and checkpoint in one
	// transaction of the state's store and, with writeIndex, makes the
	// index writes they queue just before its commit.
	applyTo(ctx context.Context, events []domain.Event, writeIndex bool) error
}

// applyIndexed is the Apply of an index projection: the state alone in a
// process that does not search the index (skipIndex), else the index
// (loaded first) with the state, counted towards the next snapshot.
func applyIndexed(ctx context.Context, p indexProjection, skipIndex bool, snap *snapshotState, events []domain.Event) error {
	if skipIndex {
		return p.applyTo(ctx, events, false)
	}
	if err := p.Load(ctx); err != nil {
		return err
	}
	if err := p.applyTo(ctx, events, true); err != nil {
		return err
	}
	snap.applied(len(events))
	return nil
}
