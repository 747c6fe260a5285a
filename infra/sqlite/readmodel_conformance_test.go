package sqlite_test

import (
	"testing"

	"github.com/engram-memory/engram/infra/readmodeltest"
	"github.com/engram-memory/engram/infra/sqlite"
)

func TestAccountsConformance(t *testing.T) {
	readmodeltest.RunAccounts(t, func(t *testing.T) readmodeltest.Accounts { return sqlite.NewAccounts(openDB(t)) })
}

func TestJobsConformance(t *testing.T) {
	readmodeltest.RunJobs(t, func(t *testing.T) readmodeltest.Jobs { return sqlite.NewJobs(openDB(t)) })
}

func TestMemoriesConformance(t *testing.T) {
	readmodeltest.RunMemories(t, func(t *testing.T) readmodeltest.Memories { return sqlite.NewMemories(openDB(t)) })
}
