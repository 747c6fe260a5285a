package dashboard

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/stack"
)

// OpenConfig says which stack to open and with what the query services
// are built; the embedder and default model only satisfy the memory
// service's constructor (the dashboard never embeds), the processor is
// reported by /api/processing.
type OpenConfig struct {
	Dir          string
	Embedder     commands.Embedder
	DefaultModel domain.EmbeddingModel
	Processor    commands.Processor
	Logger       *slog.Logger
}

// Stack is one local stack opened read-only with the query services of
// the command line and the API over it. The projection engine does not
// run: the read models are the ones the writers (the command line, a
// server) keep current, read through SQLite's WAL, so every request sees
// what was committed before it; the search indexes are never loaded.
type Stack struct {
	Memories  *commands.Memories
	Pipeline  *commands.Pipeline
	Cognition *commands.Cognition
	stack     *stack.Stack
}

// Open opens the stack in cfg.Dir read-only: no lock, no migration, no
// file created or changed. A directory without a database is an error.
func Open(ctx context.Context, cfg OpenConfig) (*Stack, error) {
	st, err := stack.Open(ctx, stack.Config{DataDir: cfg.Dir, SQLite: sqlite.Options{ReadOnly: true}, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	s, err := wire(st, cfg)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return s, nil
}

func wire(st *stack.Stack, cfg OpenConfig) (*Stack, error) {
	memories, err := commands.NewMemories(commands.MemoriesConfig{
		Writer: st.Writer, Reader: st.Memories, Embedder: cfg.Embedder, DefaultModel: cfg.DefaultModel, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	cognition, err := commands.NewCognition(commands.CognitionConfig{Memories: memories, Provenance: st.Provenance, Audit: st.Audit, Stats: st.Memories, Suggestions: st.Suggestions})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	pipeline, err := commands.NewPipeline(commands.PipelineConfig{
		Writer: st.Writer, Memories: st.Memories, Suggestions: st.Suggestions, Creator: memories, Settings: memories, Processor: cfg.Processor, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return &Stack{Memories: memories, Pipeline: pipeline, Cognition: cognition, stack: st}, nil
}

// Close releases the database.
func (s *Stack) Close() error { return s.stack.Close() }
