package dashboard_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/engram-memory/engram/dashboard"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite"
)

// openEmptyStack makes an empty stack database in a new directory (as a
// writer would) and opens it read-only for the dashboard.
func openEmptyStack(t *testing.T) *dashboard.Stack {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	lp, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	catalog, err := embed.NewCatalog(embed.CatalogOptions{Providers: []domain.EmbeddingProvider{lp}, DefaultModel: local.DefaultModelName})
	if err != nil {
		t.Fatal(err)
	}
	st, err := dashboard.Open(ctx, dashboard.OpenConfig{Dir: dir, Embedder: catalog, DefaultModel: catalog.DefaultModel(), Processor: processing.NewRuleExtractor()})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestOpenRefusesADirectoryWithoutAStack(t *testing.T) {
	dir := t.TempDir()
	_, err := dashboard.Open(context.Background(), dashboard.OpenConfig{Dir: dir, Processor: processing.NewRuleExtractor()})
	if err == nil {
		t.Fatal("opened a directory without a database")
	}
}

// An internal failure (here: the database is gone from under the server)
// answers a generic 500 that names no path, SQL or Go error; the detail
// is only in the log.
func TestInternalErrorsAreGeneric(t *testing.T) {
	st := openEmptyStack(t)
	var logs strings.Builder
	srv := httptest.NewServer(dashboard.New(dashboard.Config{UserID: "local", AgentID: "demo", Stack: st,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}).Handler())
	defer srv.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/stats", "/api/raw", "/api/episodes", "/api/audit", "/api/settings", "/api/anxiety", "/api/processing", "/api/suggestions"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `{"success":false,"error":{"code":"internal","message":"Internal Server Error","request_id":"` + resp.Header.Get("X-Request-Id") + `"}}`
		if resp.StatusCode != http.StatusInternalServerError || strings.TrimSpace(string(body)) != want {
			t.Errorf("GET %s: %d %s, want 500 %s", path, resp.StatusCode, body, want)
		}
		if resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, resp.Header.Get("Content-Type"))
		}
	}
	if !strings.Contains(logs.String(), "database is closed") {
		t.Errorf("the log lacks the cause:\n%s", logs.String())
	}
}
