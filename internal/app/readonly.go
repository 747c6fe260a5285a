package app

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections/query"
)

// Queries is the read side (projections/query) over the core's read
// models and log. cfg brings what the core does not hold: the processor
// the processing view reports, the model catalog, vector search, the
// clock; its read-model fields and processing states are the core's.
func (s *Core) Queries(cfg query.Config) (*query.Service, error) {
	cfg.Memories, cfg.Suggestions, cfg.Provenance, cfg.Audit, cfg.Jobs, cfg.States = s.Memories, s.Suggestions, s.Provenance, s.Audit, s.Jobs, s.ProcessingStates
	return query.New(cfg)
}

// ReadOnlyConfig says which local stack to open read-only: the settings
// (their DataDir is the stack's directory), and the agent of the user it
// holds.
type ReadOnlyConfig struct {
	Settings Settings
	UserID   string
	AgentID  string
}

// ReadOnly is one local stack opened read-only with the read side over
// it, for the dashboard: New with Queries over a read-only database. The
// projection engine does not run: the read models are the ones the
// writers (the command line, a server) keep current, read through
// SQLite's WAL, so every query sees what was committed before it. No
// search index and no embedding model is loaded, and nothing of the write
// side is built.
type ReadOnly struct {
	Queries *query.Service
	app     *App
}

// OpenReadOnly opens the stack in cfg.Settings.DataDir read-only: no lock,
// no migration, no file created or changed. A directory without a
// database, or a database without the agent, is an error.
func OpenReadOnly(ctx context.Context, cfg ReadOnlyConfig) (*ReadOnly, error) {
	settings := cfg.Settings
	settings.SQLite = sqlite.Options{ReadOnly: true}
	a, err := New(ctx, settings, Queries)
	if err != nil {
		return nil, err
	}
	_, found, err := a.Core.Memories.Agent(ctx, cfg.UserID, cfg.AgentID)
	if err == nil && !found {
		err = domain.Errorf(domain.KindNotFound, "stack %q holds no memories", cfg.AgentID)
	} else if err != nil {
		err = fmt.Errorf("app: read stack %s: %w", cfg.AgentID, err)
	}
	if err != nil {
		_ = a.Close(ctx)
		return nil, err
	}
	return &ReadOnly{Queries: a.Queries, app: a}, nil
}

// Close releases the database.
func (r *ReadOnly) Close() error { return r.app.Close(context.Background()) }
