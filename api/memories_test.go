package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed/local"
)

func TestMemPatch(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "patch@example.com")
	c := s.create(t, key, "a", "belief", map[string]any{"statement": "the sky is green", "confidence": 0.4})
	before := s.get(t, key, c.ID)
	patch := func(body any) response { return s.request(t, "PATCH", "/v1/memories/"+c.ID, key, body) }

	t.Run("indexed text change re-embeds", func(t *testing.T) {
		calls := s.provider.calls.Load()
		var v memory.View
		patch(map[string]any{"content": map[string]any{"statement": "the sky is blue"}}).must(t, http.StatusOK, &v)
		if got := s.provider.calls.Load() - calls; got != 1 {
			t.Errorf("%d provider calls, want 1", got)
		}
		var content memory.BeliefContent
		json.Unmarshal(v.Content, &content)
		if content.Statement != "the sky is blue" || *content.Confidence != 0.4 || content.BeliefType != "fact" {
			t.Errorf("merged content = %s", v.Content)
		}
		if v.Embedding.Status != memory.StatusEmbedded || !v.UpdatedAt.After(before.UpdatedAt) || !v.CreatedAt.Equal(before.CreatedAt) {
			t.Errorf("view = %+v", v)
		}
		if got := s.get(t, key, c.ID); string(got.Content) != string(v.Content) {
			t.Errorf("GET after PATCH = %s", got.Content)
		}
	})
	t.Run("tags or non-indexed fields do not re-embed", func(t *testing.T) {
		calls := s.provider.calls.Load()
		var v memory.View
		patch(map[string]any{"tags": []string{"sky"}}).must(t, http.StatusOK, &v)
		patch(map[string]any{"content": map[string]any{"confidence": 0.9, "scope": "self"}}).must(t, http.StatusOK, &v)
		if got := s.provider.calls.Load() - calls; got != 0 {
			t.Errorf("%d provider calls, want none", got)
		}
		if fmt.Sprint(v.Tags) != "[sky]" || !strings.Contains(string(v.Content), `"scope":"self"`) || v.Embedding.Status != memory.StatusEmbedded {
			t.Errorf("view = %+v %s", v, v.Content)
		}
	})
	t.Run("null restores a default", func(t *testing.T) {
		var v memory.View
		patch(map[string]any{"content": map[string]any{"scope": nil}}).must(t, http.StatusOK, &v)
		if !strings.Contains(string(v.Content), `"scope":"world"`) {
			t.Errorf("content = %s", v.Content)
		}
	})
	t.Run("re-validated", func(t *testing.T) {
		want := s.get(t, key, c.ID)
		patch(map[string]any{"content": map[string]any{"belief_type": "rumour"}}).invalid(t, "content.belief_type")
		patch(map[string]any{"content": map[string]any{"statement": ""}}).invalid(t, "content.statement")
		patch(map[string]any{"content": map[string]any{"colour": "red"}}).invalid(t, "content.colour")
		patch(map[string]any{"content": "text"}).invalid(t, "content")
		patch(map[string]any{"tags": []string{""}}).invalid(t, "tags")
		patch(map[string]any{"type": "note"}).invalid(t, "type")
		patch(map[string]any{}).must(t, http.StatusBadRequest, nil)
		if got := s.get(t, key, c.ID); string(got.Content) != string(want.Content) || !got.UpdatedAt.Equal(want.UpdatedAt) {
			t.Error("a refused patch changed the memory")
		}
	})
	t.Run("missing memory", func(t *testing.T) {
		s.request(t, "PATCH", "/v1/memories/"+uuid.Must(uuid.NewV7()).String(), key, map[string]any{"tags": []string{}}).must(t, http.StatusNotFound, nil)
	})
}

func TestMemForgetAndPurge(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "forget@example.com")
	keep := s.create(t, key, "a", "note", map[string]any{"content": "keep"})
	gone := s.create(t, key, "a", "note", map[string]any{"content": "forget me"})

	var f struct {
		ID          string    `json:"id"`
		Forgotten   bool      `json:"forgotten"`
		ForgottenAt time.Time `json:"forgotten_at"`
	}
	s.request(t, "DELETE", "/v1/memories/"+gone.ID, key, nil).must(t, http.StatusOK, &f)
	if f.ID != gone.ID || !f.Forgotten || time.Since(f.ForgottenAt) > time.Minute {
		t.Errorf("forget = %+v", f)
	}
	if got := s.listAll(t, key, "agent_id=a", 10); len(got) != 1 || got[0].ID != keep.ID {
		t.Errorf("default listing shows forgotten memories: %d", len(got))
	}
	withForgotten := s.listAll(t, key, "agent_id=a&include_forgotten=true", 10)
	if len(withForgotten) != 2 {
		t.Errorf("include_forgotten listing has %d, want 2", len(withForgotten))
	}
	for _, v := range withForgotten {
		if v.Forgotten != (v.ID == gone.ID) {
			t.Errorf("forgotten flag wrong on %s", v.ID)
		}
	}
	v := s.get(t, key, gone.ID)
	if !v.Forgotten || v.ForgottenAt == nil || !v.ForgottenAt.Equal(f.ForgottenAt) || v.Embedding.Status != memory.StatusNotIndexed {
		t.Errorf("GET forgotten = %+v", v)
	}
	var again struct {
		ForgottenAt time.Time `json:"forgotten_at"`
	}
	s.request(t, "DELETE", "/v1/memories/"+gone.ID, key, nil).must(t, http.StatusOK, &again)
	if !again.ForgottenAt.Equal(f.ForgottenAt) {
		t.Error("forgetting twice moved forgotten_at")
	}

	var p struct {
		ID     string `json:"id"`
		Purged bool   `json:"purged"`
	}
	s.request(t, "DELETE", "/v1/memories/"+gone.ID+"?purge=true", key, nil).must(t, http.StatusOK, &p)
	if p.ID != gone.ID || !p.Purged {
		t.Errorf("purge = %+v", p)
	}
	s.request(t, "GET", "/v1/memories/"+gone.ID, key, nil).must(t, http.StatusNotFound, nil)
	s.request(t, "DELETE", "/v1/memories/"+gone.ID+"?purge=true", key, nil).must(t, http.StatusNotFound, nil)
	s.request(t, "PATCH", "/v1/memories/"+gone.ID, key, map[string]any{"tags": []string{}}).must(t, http.StatusNotFound, nil)
	s.request(t, "DELETE", "/v1/memories/"+keep.ID+"?purge=perhaps", key, nil).invalid(t, "purge")
	if strings.Contains(string(s.export(t)), gone.ID) {
		t.Error("the read model still holds the purged memory")
	}
	// A live memory can be purged directly.
	s.request(t, "DELETE", "/v1/memories/"+keep.ID+"?purge=1", key, nil).must(t, http.StatusOK, nil)
	s.request(t, "GET", "/v1/memories/"+keep.ID, key, nil).must(t, http.StatusNotFound, nil)
}

func TestMemDeleteAgent(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "agents@example.com")
	var ids []string
	for i := range 3 {
		ids = append(ids, s.create(t, key, "doomed", "note", map[string]any{"content": fmt.Sprint("n", i)}).ID)
	}
	s.request(t, "DELETE", "/v1/memories/"+ids[0], key, nil).must(t, http.StatusOK, nil)
	survivor := s.create(t, key, "survivor", "note", map[string]any{"content": "stays"})

	var del struct {
		AgentID string `json:"agent_id"`
		Deleted bool   `json:"deleted"`
	}
	s.request(t, "DELETE", "/v1/agents/doomed", key, nil).must(t, http.StatusOK, &del)
	if del.AgentID != "doomed" || !del.Deleted {
		t.Errorf("delete = %+v", del)
	}
	for _, id := range ids {
		s.request(t, "GET", "/v1/memories/"+id, key, nil).must(t, http.StatusNotFound, nil)
	}
	var agents struct{ Agents []memory.AgentView }
	s.request(t, "GET", "/v1/agents", key, nil).must(t, http.StatusOK, &agents)
	if len(agents.Agents) != 1 || agents.Agents[0].AgentID != "survivor" {
		t.Errorf("agents = %+v", agents.Agents)
	}
	exported := string(s.export(t))
	for _, id := range append(ids, `"doomed"`) {
		if strings.Contains(exported, id) {
			t.Errorf("the read model still holds %s", id)
		}
	}
	if !strings.Contains(exported, survivor.ID) {
		t.Error("deleting one agent removed another's memory")
	}
	s.request(t, "DELETE", "/v1/agents/doomed", key, nil).must(t, http.StatusNotFound, nil)
	s.request(t, "DELETE", "/v1/agents/bad%20id", key, nil).must(t, http.StatusNotFound, nil)

	// Writing to the deleted agent id creates it again, empty.
	again := s.create(t, key, "doomed", "note", map[string]any{"content": "fresh"})
	if got := s.listAll(t, key, "agent_id=doomed&include_forgotten=true", 10); len(got) != 1 || got[0].ID != again.ID {
		t.Errorf("re-created agent holds %d memories", len(got))
	}
}

func TestMemTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, keyA := s.user(t, "alice@example.com")
	_, keyB := s.user(t, "bob@example.com")
	a := s.create(t, keyA, "shared", "note", map[string]any{"content": "alice's secret"})
	s.create(t, keyA, "alice-only", "note", map[string]any{"content": "alice"})
	b := s.create(t, keyB, "shared", "note", map[string]any{"content": "bob's note"})

	for _, req := range []struct{ method, path string }{
		{"GET", "/v1/memories/" + a.ID},
		{"DELETE", "/v1/memories/" + a.ID},
		{"DELETE", "/v1/memories/" + a.ID + "?purge=true"},
		{"DELETE", "/v1/agents/alice-only"},
	} {
		r := s.request(t, req.method, req.path, keyB, nil).must(t, http.StatusNotFound, nil)
		if r.errorCode() != "not_found" {
			t.Errorf("%s %s: code %q", req.method, req.path, r.errorCode())
		}
	}
	s.request(t, "PATCH", "/v1/memories/"+a.ID, keyB, map[string]any{"tags": []string{"mine"}}).must(t, http.StatusNotFound, nil)
	s.request(t, "POST", "/v1/memories", keyB, map[string]any{"agent_id": "shared", "type": "note",
		"content": map[string]any{"content": "x"}, "derived_from": []string{"note:" + a.ID}}).invalid(t, "derived_from")

	var agentsB struct{ Agents []memory.AgentView }
	s.request(t, "GET", "/v1/agents", keyB, nil).must(t, http.StatusOK, &agentsB)
	if len(agentsB.Agents) != 1 || agentsB.Agents[0].AgentID != "shared" || agentsB.Agents[0].MemoryCount != 1 {
		t.Errorf("B's agents = %+v", agentsB.Agents)
	}
	for query, want := range map[string]string{"agent_id=shared": b.ID, "": b.ID} {
		got := s.listAll(t, keyB, query, 10)
		if len(got) != 1 || got[0].ID != want {
			t.Errorf("B's listing %q = %d memories", query, len(got))
		}
	}
	if got := s.listAll(t, keyB, "agent_id=alice-only", 10); len(got) != 0 {
		t.Error("B lists A's agent")
	}
	// B deleting its "shared" leaves A's "shared" alone.
	s.request(t, "DELETE", "/v1/agents/shared", keyB, nil).must(t, http.StatusOK, nil)
	if v := s.get(t, keyA, a.ID); v.AgentID != "shared" {
		t.Error("A's memory changed")
	}
	var status struct {
		Agents []string `json:"agents"`
	}
	s.request(t, "GET", "/v1/auth/status", keyA, nil).must(t, http.StatusOK, &status)
	if fmt.Sprint(status.Agents) != "[alice-only shared]" {
		t.Errorf("A's auth status agents = %v", status.Agents)
	}
}

func TestMemProviderOutage(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "outage@example.com")
	s.provider.down.Store(true)
	c := s.create(t, key, "a", "note", map[string]any{"content": "written while the provider is down"})
	var batch struct{ Memories []memCreated }
	s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "a", "memories": []any{
		map[string]any{"type": "belief", "content": map[string]any{"statement": "also pending"}},
		map[string]any{"type": "drive", "content": map[string]any{"drive_type": "never indexed"}},
	}}).must(t, http.StatusCreated, &batch)
	if c.Embedding.Status != memory.StatusPending || batch.Memories[0].Embedding.Status != memory.StatusPending ||
		batch.Memories[1].Embedding.Status != memory.StatusNotIndexed {
		t.Fatalf("statuses %s, %s, %s", c.Embedding.Status, batch.Memories[0].Embedding.Status, batch.Memories[1].Embedding.Status)
	}
	if v := s.get(t, key, c.ID); v.Embedding.Status != memory.StatusPending || v.Embedding.Model != local.BuiltinModelName {
		t.Errorf("GET while down = %+v", v.Embedding)
	}
	// A patch of the indexed text while down stays pending too.
	s.request(t, "PATCH", "/v1/memories/"+c.ID, key, map[string]any{"content": map[string]any{"content": "patched while down"}}).must(t, http.StatusOK, nil)

	calls := s.provider.calls.Load()
	s.provider.down.Store(false)
	s.queue.Kick()
	memEventually(t, "the queue embeds the pending memories", func() bool {
		return s.get(t, key, c.ID).Embedding.Status == memory.StatusEmbedded &&
			s.get(t, key, batch.Memories[0].ID).Embedding.Status == memory.StatusEmbedded
	})
	if s.provider.calls.Load() == calls {
		t.Error("embedded without calling the provider")
	}
	if v := s.get(t, key, batch.Memories[1].ID); v.Embedding.Status != memory.StatusNotIndexed {
		t.Errorf("drive status = %s", v.Embedding.Status)
	}
}
