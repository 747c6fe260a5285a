package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections/query"
)

// Queries is the read side (projections/query) over the core's read
// models and log. cfg brings what the core does not hold: the processor
// the processing view reports, the model catalog, vector search, the
// clock; its read-model fields and log are the core's.
func (s *Core) Queries(cfg query.Config) (*query.Service, error) {
	cfg.Memories, cfg.Suggestions, cfg.Provenance, cfg.Audit, cfg.Jobs, cfg.Log = s.Memories, s.Suggestions, s.Provenance, s.Audit, s.Jobs, s.Store
	return query.New(cfg)
}

// ReadOnlyConfig says which local stack to open read-only: the directory,
// and the agent of the user it holds. Processor is what the processing
// view reports as the processor the stack's passes run.
type ReadOnlyConfig struct {
	Dir       string
	UserID    string
	AgentID   string
	Processor processing.ProcessorInfo
	Logger    *slog.Logger
}

// ReadOnly is one local stack opened read-only with the read side over
// it, for the dashboard. The projection engine does not run: the read
// models are the ones the writers (the command line, a server) keep
// current, read through SQLite's WAL, so every query sees what was
// committed before it. No search index and no embedding model is loaded,
// and nothing of the write side is built.
type ReadOnly struct {
	Queries *query.Service
	core    *Core
}

// OpenReadOnly opens the stack in cfg.Dir read-only: no lock, no
// migration, no file created or changed. A directory without a database,
// or a database without the agent, is an error.
func OpenReadOnly(ctx context.Context, cfg ReadOnlyConfig) (*ReadOnly, error) {
	st, err := Open(ctx, Config{DataDir: cfg.Dir, SQLite: sqlite.Options{ReadOnly: true}, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	ro, err := readOnly(ctx, st, cfg)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return ro, nil
}

func readOnly(ctx context.Context, st *Core, cfg ReadOnlyConfig) (*ReadOnly, error) {
	_, found, err := st.Memories.Agent(ctx, cfg.UserID, cfg.AgentID)
	if err != nil {
		return nil, fmt.Errorf("app: read stack %s: %w", cfg.AgentID, err)
	}
	if !found {
		return nil, domain.Errorf(domain.KindNotFound, "stack %q holds no memories", cfg.AgentID)
	}
	queries, err := st.Queries(query.Config{Processor: cfg.Processor})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return &ReadOnly{Queries: queries, core: st}, nil
}

// Close releases the database.
func (r *ReadOnly) Close() error { return r.core.Close() }
