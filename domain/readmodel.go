package domain

import "context"

// ReadModelStore is where a read model keeps its state and its
// checkpoint; Tx is the read model's own write port, declared next to the
// types it carries (account.ReadModelTx, memory.ReadModelTx,
// job.ReadModelTx, memory.ProvenanceTx, processing.SuggestionsTx,
// audit.ReadModelTx). The projections in projections/
// map events to operations on Tx; the store is the unit of work around
// them:
//
//   - Apply opens one transaction, skips the events at or below the
//     checkpoint (redelivery is harmless), calls apply with the
//     transaction for each later event in log order, writes the last
//     event's position as the checkpoint and commits. A batch is applied
//     whole or not at all: when apply or the commit fails, nothing of the
//     batch and no checkpoint is kept, so the engine's retry starts over.
//     The error names the event that failed (type and position) and wraps
//     apply's error, so errors.Is finds it.
//   - A Tx is valid only during the Apply that passed it; its statements
//     may be prepared once per batch, so a batch of a thousand events
//     parses each statement once.
type ReadModelStore[Tx any] interface {
	// Checkpoint is the position of the last event applied (0: none).
	Checkpoint(ctx context.Context) (uint64, error)
	Apply(ctx context.Context, events []Event, apply func(context.Context, Tx, Event) error) error
	// Reset drops all state and the checkpoint (before a rebuild).
	Reset(ctx context.Context) error
}
