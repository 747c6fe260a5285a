//go:build linux

package api_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/tmpfstest"
)

// storageFullMount is the size of the file system the full-disk test
// fills: the stack's database, and room to free above the 16 MiB
// (diskspace.HighWater) from which storage counts as having room again.
const storageFullMount = 32 << 20

// On a full disk every write route (and every MCP tool that writes)
// answers 507 storage_full with Retry-After, at once and with nothing of
// it stored: the log does not move, and what was stored before reads as
// it did. Once space is freed the same writes succeed.
func TestEveryWriteOnAFullDiskIs507AndStoresNothing(t *testing.T) {
	t.Parallel()
	disk := tmpfstest.Mount(t, storageFullMount)
	dataDir := filepath.Join(disk, "data") // the mount's root is shared (mode 1777)
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOptions{dataDir: dataDir, noRun: true})
	ctx := context.Background()

	// What the writes below need, written while there is room.
	_, key := s.user(t, "full-disk@example.com")
	_, _ = s.accounts.Register(ctx, metaNone(), "pending@example.com")
	pendingToken := s.latestToken("pending@example.com")
	spareKey, _ := s.createKey(key, "spare")
	note := s.create(t, key, "a1", "note", map[string]any{"content": "the harbour lighthouse keeper logs every ship"})
	forgotten := s.create(t, key, "a1", "note", map[string]any{"content": "a note forgotten before the disk filled"})
	s.must(http.StatusOK, "DELETE", "/v1/memories/"+forgotten.ID, key, nil)
	protected := s.create(t, key, "a1", "belief", map[string]any{"statement": "backups are tested monthly"})
	s.must(http.StatusOK, "POST", "/v1/memories/"+protected.ID+"/protect", key, nil)
	s.raws(t, key, "a1", goldenRaw...)
	s.process(t, key, "a1", map[string]any{"force": true})
	pending := s.suggestions(t, key, "a1", "")
	if len(pending) < 3 {
		t.Fatalf("the processing pass left %d suggestions, want 3 to accept, reject and dismiss", len(pending))
	}
	job := s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", key, map[string]any{"agent_id": "a1", "model": staticModel}).str("job_id")
	s.create(t, key, "b1", "note", map[string]any{"content": "a second agent, for a re-embedding job of its own"})
	hook := s.createWebhook(t, key, "http://127.0.0.1:9/hook", "memory.created")
	_, export := s.exportAgent(t, key, "a1", "")
	before := s.get(t, key, note.ID)

	tmpfstest.Fill(t, filepath.Join(disk, "filler"))
	memEventually(t, "the server sees its storage full", func() bool { return s.wired.Storage.Full(ctx) != nil })
	wantError(t, s.call("GET", "/readyz", "", nil), http.StatusServiceUnavailable, "storage_full")
	head, err := s.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}

	newNote := map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "written on a full disk"}}
	for _, w := range []struct {
		method, path, bearer string
		body                 any
	}{
		{"POST", "/v1/auth/register", "", map[string]any{"email": "newcomer@example.com"}},
		{"POST", "/v1/auth/verify", "", map[string]any{"token": pendingToken}},
		{"POST", "/v1/auth/login", "", map[string]any{"api_key": key}},
		{"POST", "/v1/auth/keys", key, map[string]any{"name": "another"}},
		{"DELETE", "/v1/auth/keys/" + spareKey, key, nil},
		{"POST", "/v1/auth/keys/" + spareKey + "/cycle", key, nil},
		{"POST", "/v1/memories", key, newNote},
		{"POST", "/v1/memories/batch", key, map[string]any{"agent_id": "a1", "memories": []any{map[string]any{"type": "note", "content": map[string]any{"content": "batch on a full disk"}}}}},
		{"PATCH", "/v1/memories/" + note.ID, key, map[string]any{"tags": []string{"full"}}},
		{"DELETE", "/v1/memories/" + note.ID, key, nil},
		{"POST", "/v1/memories/" + forgotten.ID + "/recover", key, nil},
		{"POST", "/v1/memories/" + note.ID + "/protect", key, nil},
		{"POST", "/v1/memories/" + protected.ID + "/unprotect", key, nil},
		{"POST", "/v1/memories/" + note.ID + "/weaken", key, map[string]any{"by": 0.3}},
		{"POST", "/v1/memories/" + note.ID + "/verify", key, nil},
		{"DELETE", "/v1/agents/a1", key, nil},
		{"PATCH", "/v1/agents/a1/settings", key, map[string]any{"lazy_decay": false}},
		{"POST", "/v1/agents/a1/process", key, map[string]any{"force": true}},
		{"POST", "/v1/agents/a1/process/exhaust", key, nil},
		{"PATCH", "/v1/agents/a1/processing", key, map[string]any{"auto_promote": true}},
		{"POST", "/v1/suggestions/" + pending[0].ID + "/accept", key, nil},
		{"POST", "/v1/suggestions/" + pending[1].ID + "/reject", key, nil},
		{"POST", "/v1/suggestions/" + pending[2].ID + "/dismiss", key, nil},
		{"POST", "/v1/embeddings/reembed", key, map[string]any{"agent_id": "a1", "memory_type": "note", "memory_id": note.ID}},
		{"POST", "/v1/embeddings/bulk-reembed", key, map[string]any{"agent_id": "b1", "model": staticModel}},
		{"POST", "/v1/embeddings/jobs/" + job + "/cancel", key, nil},
		{"POST", "/v1/sync/events", key, map[string]any{"agent_id": "a1", "events": []any{pushedNote("pushed on a full disk")}}},
		{"POST", "/v1/webhooks", key, map[string]any{"url": "http://127.0.0.1:9/other", "events": []string{"memory.created"}}},
		{"DELETE", "/v1/webhooks/" + hook.ID, key, nil},
	} {
		r := s.request(t, w.method, w.path, w.bearer, w.body)
		wantError(t, r, http.StatusInsufficientStorage, "storage_full")
		if !strings.Contains(r.errorMessage(), "storage is full") || r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: message %q, Retry-After %q: want the reason and when to retry", w.method, w.path, r.errorMessage(), r.header.Get("Retry-After"))
		}
	}
	wantError(t, s.importAgent(t, key, "a2", export), http.StatusInsufficientStorage, "storage_full")
	cs := s.mcpClient(t, key, "", "2025-11-25")
	schemas := toolSchemas(t, cs)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"add_memory", map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "added on a full disk"}}},
		{"capture", map[string]any{"agent_id": "a1", "text": "captured on a full disk"}},
		{"update_memory", map[string]any{"agent_id": "a1", "type": "note", "id": note.ID, "version": before.Version, "patch": map[string]any{"tags": []string{"full"}}}},
		{"forget_memory", map[string]any{"agent_id": "a1", "type": "note", "id": note.ID}},
		{"review_suggestions", map[string]any{"agent_id": "a1", "action": "accept", "suggestion_id": pending[0].ID}},
	} {
		callTool(t, cs, schemas, c.tool, c.args).fails(t, "storage_full", "")
	}

	if after, err := s.store.Head(ctx); err != nil || after != head {
		t.Fatalf("the log moved from %d to %d (%v) while every write was refused", head, after, err)
	}
	if got := s.get(t, key, note.ID); got.Version != before.Version || got.Forgotten || len(got.Tags) != 0 {
		t.Fatalf("a refused write changed the note: %+v", got)
	}

	// Space freed, the same writes go through.
	if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
		t.Fatal(err)
	}
	memEventually(t, "the server sees room again", func() bool { return s.wired.Storage.Full(ctx) == nil })
	s.must(http.StatusCreated, "POST", "/v1/memories", key, newNote)
	s.must(http.StatusOK, "PATCH", "/v1/memories/"+note.ID, key, map[string]any{"tags": []string{"full"}})
	if got := s.listAll(t, key, "agent_id=a1&type=note", 100); len(got) != 2 {
		t.Fatalf("after space was freed the agent lists %d notes, want the note and the new one", len(got))
	}
}
