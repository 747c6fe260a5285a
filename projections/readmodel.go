package projections

import (
	"context"

	"github.com/engram-memory/engram/domain"
)

// readModel is a projection into a domain.ReadModelStore: apply maps one
// event to operations on the store's transaction (events the read model
// does not use map to none). The store applies a delivered batch in one
// transaction with the checkpoint.
type readModel[Tx any] struct {
	name  string
	store domain.ReadModelStore[Tx]
	apply func(context.Context, Tx, domain.Event) error
	// events decodes the events no engine decoded (see Events).
	events *domain.EventRegistry
}

// Name implements Projection.
func (p *readModel[Tx]) Name() string { return p.name }

// Position implements Projection.
func (p *readModel[Tx]) Position(ctx context.Context) (uint64, error) {
	return p.store.Checkpoint(ctx)
}

// checkpointKey implements checkpointed.
func (p *readModel[Tx]) checkpointKey() (domain.CheckpointTable, string, bool) { return keyOf(p.store) }

// Apply implements Projection. The store names the event that failed,
// the engine the projection.
func (p *readModel[Tx]) Apply(ctx context.Context, events []domain.Event) error {
	p.events.DecodeAll(events)
	return p.store.Apply(ctx, events, p.apply)
}

// Reset implements Projection.
func (p *readModel[Tx]) Reset(ctx context.Context) error { return p.store.Reset(ctx) }

// UnitOfWork implements unitOfWorker.
func (p *readModel[Tx]) UnitOfWork() domain.UnitOfWork { return unitOfWorkOf(p.store) }
