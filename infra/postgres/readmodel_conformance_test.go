package postgres_test

import (
	"testing"

	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/internal/readmodeltest"
)

// The read-model stores run the same conformance suites as the SQLite
// stores (infra/sqlite/readmodel_conformance_test.go), each on a fresh
// schema of the package's PostgreSQL.

func TestAccountsConformance(t *testing.T) {
	readmodeltest.RunAccounts(t, func(t *testing.T) readmodeltest.Accounts { return postgres.NewAccounts(openDB(t)) })
}

func TestJobsConformance(t *testing.T) {
	readmodeltest.RunJobs(t, func(t *testing.T) readmodeltest.Jobs { return postgres.NewJobs(openDB(t)) })
}

func TestAuditConformance(t *testing.T) {
	readmodeltest.RunAudit(t, func(t *testing.T) readmodeltest.Audit { return postgres.NewAudit(openDB(t)) })
}

func TestProvenanceConformance(t *testing.T) {
	readmodeltest.RunProvenance(t, func(t *testing.T) readmodeltest.Provenance { return postgres.NewProvenance(openDB(t)) })
}

func TestSuggestionsConformance(t *testing.T) {
	readmodeltest.RunSuggestions(t, func(t *testing.T) readmodeltest.Suggestions { return postgres.NewSuggestions(openDB(t)) })
}

func TestMemoriesConformance(t *testing.T) {
	readmodeltest.RunMemories(t, func(t *testing.T) readmodeltest.Memories { return postgres.NewMemories(openDB(t)) })
	readmodeltest.RunMemoryQueries(t, func(t *testing.T) readmodeltest.MemoryQueries { return postgres.NewMemories(openDB(t)) })
}

func TestWebhooksConformance(t *testing.T) {
	readmodeltest.RunWebhooks(t, func(t *testing.T) readmodeltest.Webhooks { return postgres.NewWebhooks(openDB(t)) })
}
