package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/stack"
)

// OpenConfig says which stack to open: the directory, and the agent of
// the user it holds. Processor is what /api/processing reports as the
// processor the stack's passes run.
type OpenConfig struct {
	Dir       string
	UserID    string
	AgentID   string
	Processor commands.Processor
	Logger    *slog.Logger
}

// Stack is one local stack opened read-only with the query services of
// the command line and the API over it. The projection engine does not
// run: the read models are the ones the writers (the command line, a
// server) keep current, read through SQLite's WAL, so every request sees
// what was committed before it. No search index and no embedding model
// is loaded: the dashboard neither searches nor embeds.
type Stack struct {
	Memories  *commands.Memories
	Pipeline  *commands.Pipeline
	Cognition *commands.Cognition
	stack     *stack.Stack
}

// errReadOnly answers any attempt to embed: the dashboard never writes,
// so reaching an embedder is a bug.
var errReadOnly = errors.New("dashboard: the stack is open read-only; nothing is embedded")

// readOnlyEmbedder is the memory service's embedder in the dashboard.
type readOnlyEmbedder struct{}

func (readOnlyEmbedder) Embed(context.Context, domain.EmbedRequest) (domain.EmbedResult, error) {
	return domain.EmbedResult{}, errReadOnly
}

// Open opens the stack in cfg.Dir read-only: no lock, no migration, no
// file created or changed. A directory without a database, or a database
// without the agent, is an error.
func Open(ctx context.Context, cfg OpenConfig) (*Stack, error) {
	st, err := stack.Open(ctx, stack.Config{DataDir: cfg.Dir, SQLite: sqlite.Options{ReadOnly: true}, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	s, err := wire(ctx, st, cfg)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return s, nil
}

func wire(ctx context.Context, st *stack.Stack, cfg OpenConfig) (*Stack, error) {
	agent, found, err := st.Memories.Agent(ctx, cfg.UserID, cfg.AgentID)
	if err != nil {
		return nil, fmt.Errorf("dashboard: read stack %s: %w", cfg.AgentID, err)
	}
	if !found {
		return nil, domain.Errorf(domain.KindNotFound, "stack %q holds no memories", cfg.AgentID)
	}
	memories, err := commands.NewMemories(commands.MemoriesConfig{
		Writer: st.Writer, Reader: st.Memories, Embedder: readOnlyEmbedder{},
		DefaultModel: domain.EmbeddingModel{Name: agent.EmbeddingModel, Dimensions: agent.Dimensions}, Logger: cfg.Logger,
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
