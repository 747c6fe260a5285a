package postgres_test

import (
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/indexstatetest"
	"github.com/engram-memory/engram/infra/postgres"
)

func TestKeywordStateConformance(t *testing.T) {
	pg.URL(t)
	indexstatetest.RunKeyword(t, func(t *testing.T) domain.KeywordState { return postgres.NewKeywordState(openDB(t), "keyword") })
}

func TestVectorStateConformance(t *testing.T) {
	pg.URL(t)
	indexstatetest.RunVectors(t, func(t *testing.T) domain.VectorState { return postgres.NewVectorState(openDB(t), "vectors") })
}
