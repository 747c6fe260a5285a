package vectorindex_test

import (
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/infra/vectorindextest"
)

func TestPortConformance(t *testing.T) {
	vectorindextest.Run(t, vectorindextest.Target{
		Open: func(t *testing.T) domain.VectorIndex {
			ix := vectorindex.New(vectorindex.Options{})
			t.Cleanup(ix.Close)
			return vectorindex.NewPort(ix)
		},
	})
}
