package textindex_test

import (
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/keywordindextest"
	"github.com/engram-memory/engram/infra/textindex"
)

func TestPortConformance(t *testing.T) {
	keywordindextest.Run(t, keywordindextest.Target{
		Open: func(*testing.T) domain.KeywordIndex { return textindex.NewPort(textindex.Options{}, 0) },
	})
}
