package sqlite_test

import (
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/indexstatetest"
	"github.com/engram-memory/engram/infra/sqlite"
)

func TestKeywordStateConformance(t *testing.T) {
	indexstatetest.RunKeyword(t, func(t *testing.T) domain.KeywordState { return sqlite.NewKeywordStore(openDB(t)) })
}

func TestVectorStateConformance(t *testing.T) {
	indexstatetest.RunVectors(t, func(t *testing.T) domain.VectorState { return sqlite.NewVectorStore(openDB(t)) })
}
