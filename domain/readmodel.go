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

// UnitOfWork is the capability of a store's database to group the writes
// of several stores into one transaction: inside fn, every Apply of a
// store of that database (its writes and its checkpoint) joins one
// transaction, committed only when fn returns nil, so no checkpoint ever
// advances past writes that were not kept. A rebuild applies each chunk
// of the log to all the read models of one database this way. Stores
// that can join one offer it through UnitOfWorkStore.
type UnitOfWork interface {
	InUnitOfWork(ctx context.Context, fn func(ctx context.Context) error) error
}

// UnitOfWorkStore is a store whose writes can join a UnitOfWork; stores
// returning the same UnitOfWork share one.
type UnitOfWorkStore interface {
	UnitOfWork() UnitOfWork
}

// CheckpointTable is where the checkpoints of several stores are kept,
// one row each, so a start that asks for all of them reads them at once:
// Checkpoints returns the position of each of names (0: none applied),
// read in one statement, all from the same moment.
type CheckpointTable interface {
	Checkpoints(ctx context.Context, names []string) (map[string]uint64, error)
}

// CheckpointKeyed is a store whose checkpoint is the row Name of Table;
// its Checkpoint reads the same value. Stores of one database return the
// same Table.
type CheckpointKeyed interface {
	CheckpointKey() (table CheckpointTable, name string)
}
