package app

import (
	"context"
	"fmt"
	"io"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/domain/webhook"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections/query"
	"github.com/engram-memory/engram/projections/search"
)

// Read-model backends (--read-models).
const (
	SQLiteReadModels   = "sqlite"
	PostgresReadModels = "postgres"
)

// ReadModels chooses where the read models live. The zero value keeps
// them in the data dir's SQLite, one replica per node.
type ReadModels struct {
	// Backend is SQLiteReadModels (default) or PostgresReadModels: one
	// copy in PostgreSQL that every node sharing the log reads and feeds.
	Backend string
	// URL locates the PostgreSQL database (postgres:// URL or key=value
	// DSN). Empty with --event-store postgres: the event store's database.
	// Its password comes from the environment, as the event store's does.
	URL string
}

// Validate checks the choice against the log without connecting.
func (rm ReadModels) Validate(es EventStore) error {
	switch rm.Backend {
	case "", SQLiteReadModels:
		if rm.URL != "" {
			return fmt.Errorf("--postgres-url is only for --read-models %s", PostgresReadModels)
		}
	case PostgresReadModels:
		// Read models fed from one node's own log would be overwritten by
		// any other node's: shared read models need the shared log.
		if !es.Shared() {
			return fmt.Errorf("--read-models %s needs a shared event store (--event-store %s or %s)", PostgresReadModels, PostgresLog, KurrentLog)
		}
		if rm.URL == "" && es.Backend != PostgresLog {
			return fmt.Errorf("--read-models %s needs --postgres-url (or ENGRAM_POSTGRES_URL)", PostgresReadModels)
		}
	default:
		return fmt.Errorf("--read-models must be %s or %s, not %q", SQLiteReadModels, PostgresReadModels, rm.Backend)
	}
	return nil
}

// exporter writes a read model's state as canonical bytes (the replay
// tests and `engram projections` compare them).
type exporter interface {
	Export(ctx context.Context, w io.Writer) error
}

// AccountsReadModel is the accounts read model as the core's consumers
// read it; both backends implement it.
type AccountsReadModel interface {
	account.ReadModel
	commands.AccountReadModel
	UserByEmail(ctx context.Context, email string) (account.UserView, bool, error)
	exporter
}

// MemoriesReadModel is the memories read model as the core's consumers
// read it (the commands, search, the scheduler, the CLI and the
// dashboard); both backends implement it.
type MemoriesReadModel interface {
	memory.ReadModel
	commands.MemoryReadModel
	commands.AgentLister
	workers.PendingReader
	query.MemoryReadModel
	workers.AgentDirectory
	workers.JobMemories
	commands.MemoryOwners
	search.MemoryReader
	MemoriesByID(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.View, error)
	exporter
}

// JobsReadModel is the jobs read model as the core's consumers read it.
type JobsReadModel interface {
	job.ReadModel
	commands.JobReadModel
	workers.ActiveJobs
	query.JobReadModel
	exporter
	// CountByStatus counts the jobs in each status (metrics).
	CountByStatus(ctx context.Context) (map[string]int, error)
}

// SuggestionsReadModel is the suggestions read model as the core's
// consumers read it.
type SuggestionsReadModel interface {
	processing.SuggestionsReadModel
	commands.SuggestionReadModel
	commands.SuggestionOwners
	query.SuggestionReadModel
	exporter
}

// ProvenanceReadModel is the provenance read model as the core's
// consumers read it.
type ProvenanceReadModel interface {
	memory.ProvenanceReadModel
	query.ProvenanceReadModel
	exporter
}

// AuditReadModel is the audit read model as the core's consumers read it.
type AuditReadModel interface {
	audit.ReadModel
	query.AuditReadModel
	exporter
}

// WebhooksReadModel is the webhooks read model with its outbox as the
// stack's consumers read it.
type WebhooksReadModel interface {
	webhook.ReadModel
	webhook.Outbox
	commands.WebhookReadModel
	exporter
}

// readModels are the opened read-model stores and what closes them.
type readModels struct {
	accounts    AccountsReadModel
	memories    MemoriesReadModel
	jobs        JobsReadModel
	suggestions SuggestionsReadModel
	provenance  ProvenanceReadModel
	audit       AuditReadModel
	webhooks    WebhooksReadModel
	// postgres is the database of PostgreSQL read models (nil in SQLite).
	postgres *postgres.DB
	close    func()
}

// openReadModels opens the chosen read-model stores; each backend is one
// case. PostgreSQL read models in the event store's database share its
// connection pool.
func openReadModels(ctx context.Context, cfg Config, db *sqlite.DB, logDB *postgres.DB) (*readModels, error) {
	switch cfg.ReadModels.Backend {
	case PostgresReadModels:
		pg, closePG := logDB, func() {}
		if cfg.ReadModels.URL != "" && (logDB == nil || cfg.ReadModels.URL != cfg.EventStore.URL) {
			var err error
			if pg, err = postgres.Open(ctx, cfg.ReadModels.URL); err != nil {
				return nil, fmt.Errorf("--read-models %s: %w", PostgresReadModels, err)
			}
			closePG = pg.Close
		}
		return &readModels{
			accounts: postgres.NewAccounts(pg), memories: postgres.NewMemories(pg), jobs: postgres.NewJobs(pg),
			suggestions: postgres.NewSuggestions(pg), provenance: postgres.NewProvenance(pg), audit: postgres.NewAudit(pg),
			webhooks: postgres.NewWebhooks(pg),
			postgres: pg, close: closePG,
		}, nil
	default:
		return &readModels{
			accounts: sqlite.NewAccounts(db), memories: sqlite.NewMemories(db), jobs: sqlite.NewJobs(db),
			suggestions: sqlite.NewSuggestions(db), provenance: sqlite.NewProvenance(db), audit: sqlite.NewAudit(db),
			webhooks: sqlite.NewWebhooks(db),
			close:    func() {},
		}, nil
	}
}
