package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testserver"
)

// TestLiveRebuildOfOneProjection rebuilds the keyword projection through
// `engram projections rebuild keyword` beside a live server while clients
// keep writing, reading by id and listing: every acknowledged write is
// readable at once, the rebuild returns, and afterwards every read model
// equals a fresh offline rebuild of the same log.
func TestLiveRebuildOfOneProjection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, nil, "--ip-rate-limit", "0", "--rate-limit", "0")
	key := testserver.Register(t, p.BaseURL, dataDir, "live-rebuild@example.com")

	sock, err := os.Stat(filepath.Join(dataDir, adminSocketName))
	if err != nil || sock.Mode().Perm() != 0o600 || sock.Mode().Type() != os.ModeSocket {
		t.Fatalf("admin socket: %v, mode %v; want a 0600 socket", err, sock.Mode())
	}

	const loaded = 600
	for b := 0; b < loaded/100; b++ {
		batch := make([]any, 100)
		for i := range batch {
			batch[i] = map[string]any{"type": "note", "content": map[string]string{"content": fmt.Sprintf("loaded note %d about the harbour lighthouse", b*100+i)}}
		}
		if status, err := call(t, "POST", p.BaseURL+"/v1/memories/batch", key, map[string]any{"agent_id": "keeper", "memories": batch}, nil); err != nil || status != 201 {
			t.Fatalf("batch %d: %d %v", b, status, err)
		}
	}

	// Writers and readers run through the whole rebuild.
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex
		written []string
		failure error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	wg.Add(2)
	go func() { // write, then read the write back by id at once
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			var created struct {
				ID string `json:"id"`
			}
			if _, err := call(t, "POST", p.BaseURL+"/v1/memories", key, map[string]any{"agent_id": "keeper", "type": "note",
				"content": map[string]string{"content": fmt.Sprintf("written during the rebuild %d", i)}}, &created); err != nil {
				fail(err)
				return
			}
			if _, err := call(t, "GET", p.BaseURL+"/v1/memories/"+created.ID, key, nil, nil); err != nil {
				fail(fmt.Errorf("read-your-write during the rebuild: %w", err))
				return
			}
			mu.Lock()
			written = append(written, created.ID)
			mu.Unlock()
		}
	}()
	go func() { // list and search while the keyword projection rebuilds
		defer wg.Done()
		for !stop.Load() {
			var page struct {
				Memories []any `json:"memories"`
			}
			if _, err := call(t, "GET", p.BaseURL+"/v1/memories?agent_id=keeper&limit=50", key, nil, &page); err != nil || len(page.Memories) == 0 {
				fail(fmt.Errorf("list during the rebuild: %d memories, %v", len(page.Memories), err))
				return
			}
			if _, err := call(t, "POST", p.BaseURL+"/v1/search", key, map[string]any{"agent_id": "keeper", "query": "harbour lighthouse"}, nil); err != nil {
				fail(fmt.Errorf("search during the rebuild: %w", err))
				return
			}
		}
	}()

	out, err := runCLI(t, ctx, "projections", "rebuild", "keyword", "--data-dir", dataDir)
	if err != nil || !strings.Contains(out, "rebuilt keyword on the live server") {
		t.Fatalf("live rebuild: %v\n%s\n%s", err, out, p.Log())
	}
	for _, refused := range []struct{ args, want string }{
		{"memories", "not rebuildable while the server takes writes"},
		{"no-such-projection", "unknown projection"},
		{"", "rebuilds one named projection at a time"},
	} {
		args := append([]string{"projections", "rebuild"}, strings.Fields(refused.args)...)
		if out, err := runCLI(t, ctx, append(args, "--data-dir", dataDir)...); err == nil || !strings.Contains(out, refused.want) {
			t.Errorf("rebuild %q beside the live server: %v\n%s; want an error saying %q", refused.args, err, out, refused.want)
		}
	}
	stop.Store(true)
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	if len(written) == 0 {
		t.Fatal("no write landed during the rebuild")
	}
	// The writes acknowledged during the rebuild are found by keyword
	// once it returned (the wait of a later write includes it again).
	var res struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if _, err := call(t, "POST", p.BaseURL+"/v1/search", key, map[string]any{"agent_id": "keeper", "query": "written during the rebuild", "mode": "keyword", "limit": 100}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) < min(len(written), 10) {
		t.Errorf("keyword search finds %d of the %d writes made during the rebuild", len(res.Results), len(written))
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, adminSocketName)); !os.IsNotExist(err) {
		t.Errorf("the admin socket outlives the server: %v", err)
	}

	live := exportAllReadModels(t, ctx, dataDir)
	if out, err := runCLI(t, ctx, "projections", "rebuild", "--data-dir", dataDir); err != nil {
		t.Fatalf("offline rebuild: %v\n%s", err, out)
	}
	rebuilt := exportAllReadModels(t, ctx, dataDir)
	for name, want := range rebuilt {
		if !bytes.Equal(live[name], want) {
			t.Errorf("read model %s after the live rebuild differs from a fresh offline rebuild (%d bytes vs %d)", name, len(live[name]), len(want))
		}
	}
	t.Logf("%d writes during the live rebuild", len(written))
}

// exportAllReadModels exports every SQLite read model and index state of
// a stopped data dir, by projection name.
func exportAllReadModels(t *testing.T, ctx context.Context, dataDir string) map[string][]byte {
	t.Helper()
	stApp, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dataDir}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := stApp.Core
	defer st.Close()
	out := map[string][]byte{}
	for name, model := range map[string]interface {
		Export(context.Context, io.Writer) error
	}{
		"accounts": st.Accounts, "memories": st.Memories, "jobs": st.Jobs, "provenance": st.Provenance, "audit": st.Audit,
		"suggestions": st.Suggestions, "webhooks": st.Webhooks, "keyword": sqlite.NewKeywordStore(st.DB), "vectors": sqlite.NewVectorStore(st.DB),
	} {
		var buf bytes.Buffer
		if err := model.Export(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		out[name] = buf.Bytes()
	}
	return out
}

// A data dir whose path is too long for a Unix socket still serves; only
// the admin channel is missing, and the server says so.
func TestServeWithADataDirTooLongForTheAdminSocket(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), strings.Repeat("d", maxSocketPath))
	p := startServer(t, dataDir, nil)
	testserver.Register(t, p.BaseURL, dataDir, "long-path@example.com")
	if !strings.Contains(p.Log(), "no admin socket") {
		t.Errorf("the server does not say it runs without the admin socket:\n%s", p.Log())
	}
}
