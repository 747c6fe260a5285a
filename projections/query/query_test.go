package query_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/projections/query"
)

// newQueries is the read side over empty SQLite read models and log, as
// the dashboard opens it: no model catalog, no vector search.
func newQueries(t *testing.T) *query.Service {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := query.New(query.Config{
		Memories: sqlite.NewMemories(db), Suggestions: sqlite.NewSuggestions(db), Provenance: sqlite.NewProvenance(db),
		Audit: sqlite.NewAudit(db), Jobs: sqlite.NewJobs(db), States: processing.NewSnapshots(sqlite.NewEventStore(db, time.Millisecond)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestQueriesRefuseWhatTheyCannotAnswer: a query of a bad shape is 400
// invalid naming the field, one of something the user does not have is
// 404, and nothing is written to answer either.
func TestQueriesRefuseWhatTheyCannotAnswer(t *testing.T) {
	q := newQueries(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		query func() error
		kind  domain.Kind
	}{
		{"a list limit above the maximum", func() error {
			_, err := q.List(ctx, memory.ListQuery{UserID: "u1", Limit: memory.MaxListLimit + 1})
			return err
		}, domain.KindInvalid},
		{"an agent list limit below one", func() error {
			_, err := q.Agents(ctx, memory.AgentListQuery{UserID: "u1", Limit: -1})
			return err
		}, domain.KindInvalid},
		{"an audit limit above the maximum", func() error {
			_, err := q.Audit(ctx, audit.Query{UserID: "u1", Limit: audit.MaxLimit + 1})
			return err
		}, domain.KindInvalid},
		{"a provenance direction that is none", func() error {
			_, err := q.Provenance(ctx, "u1", "m1", "sideways", 0)
			return err
		}, domain.KindInvalid},
		{"a similar limit of zero", func() error {
			_, err := q.Similar(ctx, "u1", query.SimilarRequest{AgentID: "a", Embedding: []float32{1}})
			return err
		}, domain.KindInvalid},
		{"a memory the user does not have", func() error {
			_, err := q.Get(ctx, "u1", "m1")
			return err
		}, domain.KindNotFound},
		{"the settings of an agent the user does not have", func() error {
			_, err := q.Settings(ctx, "u1", "a")
			return err
		}, domain.KindNotFound},
		{"the stats of an agent id that cannot be one", func() error {
			_, err := q.Stats(ctx, "u1", "not an agent id!")
			return err
		}, domain.KindNotFound},
		{"the processing view of a missing agent", func() error {
			_, err := q.Processing(ctx, "u1", "a")
			return err
		}, domain.KindNotFound},
		{"the suggestions of a missing agent", func() error {
			_, err := q.Suggestions(ctx, "u1", "a", "", 10)
			return err
		}, domain.KindNotFound},
		{"the anxiety of a missing agent", func() error {
			_, err := q.Anxiety(ctx, "u1", "a")
			return err
		}, domain.KindNotFound},
		{"a raw entry of a missing agent", func() error {
			_, err := q.RawEntry(ctx, "u1", "a", "r1")
			return err
		}, domain.KindNotFound},
		{"a job the user does not have", func() error {
			_, err := q.Job(ctx, "u1", "j1")
			return err
		}, domain.KindNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.query(); domain.ErrorKind(err) != c.kind {
				t.Errorf("got %v (kind %s), want kind %s", err, domain.ErrorKind(err), c.kind)
			}
		})
	}
}

// TestModelsWithoutACatalog: a read side opened without a model catalog
// (the dashboard's) lists no models.
func TestModelsWithoutACatalog(t *testing.T) {
	if models := newQueries(t).Models(context.Background()); len(models) != 0 {
		t.Errorf("Models = %v, want none", models)
	}
}
