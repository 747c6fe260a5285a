package sqlite_test

import (
	"testing"

	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/readmodeltest"
)

func TestAccountsConformance(t *testing.T) {
	readmodeltest.RunAccounts(t, func(t *testing.T) readmodeltest.Accounts { return sqlite.NewAccounts(openDB(t)) })
}

func TestJobsConformance(t *testing.T) {
	readmodeltest.RunJobs(t, func(t *testing.T) readmodeltest.Jobs { return sqlite.NewJobs(openDB(t)) })
}

func TestMemoriesConformance(t *testing.T) {
	readmodeltest.RunMemories(t, func(t *testing.T) readmodeltest.Memories { return sqlite.NewMemories(openDB(t)) })
	readmodeltest.RunMemoryQueries(t, func(t *testing.T) readmodeltest.MemoryQueries { return sqlite.NewMemories(openDB(t)) })
}

func TestProvenanceConformance(t *testing.T) {
	readmodeltest.RunProvenance(t, func(t *testing.T) readmodeltest.Provenance { return sqlite.NewProvenance(openDB(t)) })
}

func TestSuggestionsConformance(t *testing.T) {
	readmodeltest.RunSuggestions(t, func(t *testing.T) readmodeltest.Suggestions { return sqlite.NewSuggestions(openDB(t)) })
}

func TestAuditConformance(t *testing.T) {
	readmodeltest.RunAudit(t, func(t *testing.T) readmodeltest.Audit { return sqlite.NewAudit(openDB(t)) })
}

func TestWebhooksConformance(t *testing.T) {
	readmodeltest.RunWebhooks(t, func(t *testing.T) readmodeltest.Webhooks { return sqlite.NewWebhooks(openDB(t)) })
}
