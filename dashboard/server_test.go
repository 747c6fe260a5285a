package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/dashboard"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/app"
)

// seedStack writes n raw entries of agent "demo" into a new stack
// directory through a writable stack, as the command line's import would,
// and closes it.
func seedStack(t testing.TB, n int) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	a, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir, GroupCommit: time.Millisecond}}, app.Writes)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	memories := a.Memories
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorUser, ID: "local", UserID: "local"}, RequestID: "test"}
	for done := 0; done < n; {
		batch := make([]commands.MemoryInput, min(memory.MaxBatch, n-done))
		for i := range batch {
			batch[i] = commands.MemoryInput{Type: "raw_entry", Content: json.RawMessage(fmt.Sprintf(`{"content":"seeded thought number %d"}`, done+i))}
		}
		if _, err := memories.CreateBatch(ctx, meta, "demo", batch); err != nil {
			t.Fatal(err)
		}
		done += len(batch)
	}
	return dir
}

func openStack(t testing.TB, dir, agentID string) (*app.ReadOnly, error) {
	return app.OpenReadOnly(context.Background(), app.ReadOnlyConfig{Settings: app.Settings{Config: app.Config{DataDir: dir}}, UserID: "local", AgentID: agentID})
}

func TestOpenRefusesWhatIsNoStack(t *testing.T) {
	if _, err := openStack(t, t.TempDir(), "demo"); err == nil {
		t.Error("opened a directory without a database")
	}
	dir := seedStack(t, 1)
	_, err := openStack(t, dir, "other")
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindNotFound || !strings.Contains(de.Message, `"other"`) {
		t.Errorf("a database without the agent: %v, want not found naming it", err)
	}
}

// An internal failure (here: the database is gone from under the server)
// answers a generic 500 that names no path, SQL or Go error; the detail
// is only in the log.
func TestInternalErrorsAreGeneric(t *testing.T) {
	st, err := openStack(t, seedStack(t, 1), "demo")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	srv := httptest.NewServer(dashboard.New(dashboard.Config{UserID: "local", AgentID: "demo", Queries: st.Queries,
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

// The dashboard registers GET routes only; a HEAD request is answered as
// the GET of its path would be, without the body, and a path no GET
// answers is still a 404.
func TestHEADIsAnsweredAsGET(t *testing.T) {
	st, err := openStack(t, seedStack(t, 1), "demo")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(dashboard.New(dashboard.Config{UserID: "local", AgentID: "demo", Queries: st.Queries}).Handler())
	defer srv.Close()
	cases := []struct {
		path   string
		status int
	}{
		{"/api/stats", http.StatusOK},
		{"/api/raw", http.StatusOK},
		{"/api/notes", http.StatusOK},
		{"/", http.StatusOK},
		{"/api/nothing-here", http.StatusNotFound},
	}
	for _, c := range cases {
		resp, err := http.Head(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || len(body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes, want %d and no body", c.path, resp.StatusCode, len(body), c.status)
		}
	}
}

// BenchmarkOpenAndFirstAnswer is the dashboard's start on stacks of
// growing size: open read-only, wire the services, answer /api/stats
// once. Nothing in it should grow with the stack but the counting query.
func BenchmarkOpenAndFirstAnswer(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("raw=%d", n), func(b *testing.B) {
			dir := seedStack(b, n)
			b.ResetTimer()
			for range b.N {
				st, err := openStack(b, dir, "demo")
				if err != nil {
					b.Fatal(err)
				}
				rec := httptest.NewRecorder()
				req := httptest.NewRequest("GET", "http://127.0.0.1/api/stats", nil)
				dashboard.New(dashboard.Config{UserID: "local", AgentID: "demo", Queries: st.Queries}).Handler().ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
