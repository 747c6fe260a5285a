package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/engram-memory/engram/domain/memory"
)

// notes is a batch body of n notes for the agent.
func notes(agentID string, n int, text string) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"type": "note", "content": map[string]any{"content": fmt.Sprint(text, " ", i)}}
	}
	return map[string]any{"agent_id": agentID, "memories": items}
}

// agentsOf lists every agent of the bearer, page by page.
func (s *stack) agentsOf(t testing.TB, bearer string, limit int) []memory.AgentView {
	t.Helper()
	var all []memory.AgentView
	cursor := ""
	for pages := 0; pages < 1000; pages++ {
		path := fmt.Sprintf("/v1/agents?limit=%d", limit)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page struct {
			Agents     []memory.AgentView `json:"agents"`
			NextCursor *string            `json:"next_cursor"`
		}
		s.request(t, "GET", path, bearer, nil).must(t, http.StatusOK, &page)
		all = append(all, page.Agents...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
	t.Fatal("agent listing does not end")
	return nil
}

func (s *stack) agent(t testing.TB, bearer, agentID string) memory.AgentView {
	t.Helper()
	for _, a := range s.agentsOf(t, bearer, 1000) {
		if a.AgentID == agentID {
			return a
		}
	}
	t.Fatalf("no agent %s", agentID)
	return memory.AgentView{}
}

// wantQuota fails unless r is 403 with the quota's code and figures.
func wantQuota(t testing.TB, r response, code string, limit int) {
	t.Helper()
	wantError(t, r, http.StatusForbidden, code)
	if got := num(r.details()["limit"]); got != limit {
		t.Errorf("details.limit = %d, want %d: %s", got, limit, r.raw)
	}
}

func TestMemQuotaMemoriesPerAgent(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{quotas: memory.Quotas{MemoriesPerAgent: 5}})
	_, key := s.user(t, "quota-memories@example.com")
	s.request(t, "POST", "/v1/memories/batch", key, notes("a", 3, "first")).must(t, http.StatusCreated, nil)

	// A batch that crosses the limit writes none of its memories, and
	// costs no embedding.
	calls := s.provider.calls.Load()
	wantQuota(t, s.request(t, "POST", "/v1/memories/batch", key, notes("a", 3, "crossing")), memory.CodeQuotaMemoriesPerAgent, 5)
	if a := s.agent(t, key, "a"); a.StoredMemories != 3 {
		t.Fatalf("a refused batch left %d memories, want 3", a.StoredMemories)
	}
	if got := s.provider.calls.Load() - calls; got != 0 {
		t.Errorf("a refused batch called the provider %d times", got)
	}
	s.request(t, "POST", "/v1/memories/batch", key, notes("a", 2, "fits")).must(t, http.StatusCreated, nil)
	r := s.request(t, "POST", "/v1/memories", key, map[string]any{"agent_id": "a", "type": "note", "content": map[string]any{"content": "one more"}})
	wantQuota(t, r, memory.CodeQuotaMemoriesPerAgent, 5)
	if d := r.details(); num(d["used"]) != 5 || num(d["requested"]) != 1 {
		t.Errorf("details = %v", d)
	}

	// Forgotten memories are kept, so they count; a purge frees one.
	page := s.listAll(t, key, "agent_id=a", 10)
	s.request(t, "DELETE", "/v1/memories/"+page[0].ID, key, nil).must(t, http.StatusOK, nil)
	wantQuota(t, s.request(t, "POST", "/v1/memories", key, map[string]any{"agent_id": "a", "type": "note", "content": map[string]any{"content": "x"}}),
		memory.CodeQuotaMemoriesPerAgent, 5)
	s.request(t, "DELETE", "/v1/memories/"+page[0].ID+"?purge=true", key, nil).must(t, http.StatusOK, nil)
	s.create(t, key, "a", "note", map[string]any{"content": "fits again"})

	// The quota is per agent.
	s.request(t, "POST", "/v1/memories/batch", key, notes("b", 5, "other agent")).must(t, http.StatusCreated, nil)
}

func TestMemQuotaAgentsPerUser(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{quotas: memory.Quotas{AgentsPerUser: 2}})
	_, key := s.user(t, "quota-agents@example.com")
	_, other := s.user(t, "quota-agents-other@example.com")
	s.create(t, key, "a", "note", map[string]any{"content": "a"})
	s.create(t, key, "b", "note", map[string]any{"content": "b"})
	wantQuota(t, s.request(t, "POST", "/v1/memories/batch", key, notes("c", 2, "c")), memory.CodeQuotaAgents, 2)
	if n := len(s.agentsOf(t, key, 10)); n != 2 {
		t.Fatalf("%d agents after a refused one, want 2", n)
	}
	s.create(t, key, "a", "note", map[string]any{"content": "existing agents still take memories"})
	s.create(t, other, "c", "note", map[string]any{"content": "another user has their own quota"})
	s.request(t, "DELETE", "/v1/agents/b", key, nil).must(t, http.StatusOK, nil)
	s.create(t, key, "c", "note", map[string]any{"content": "the delete freed a place"})
}

func TestMemQuotaTextBytes(t *testing.T) {
	t.Parallel()
	one, err := memory.NormalizeContent(memory.Note, []byte(`{"content":"0123456789"}`))
	if err != nil {
		t.Fatal(err)
	}
	size := len(one) // bytes one such note counts
	s := newStack(t, stackOptions{quotas: memory.Quotas{TextBytesPerUser: int64(3*size + size/2)}})
	_, key := s.user(t, "quota-bytes@example.com")
	note := map[string]any{"content": "0123456789"}
	ids := []string{s.create(t, key, "a", "note", note).ID, s.create(t, key, "b", "note", note).ID}

	// Two more would cross the limit: the batch writes nothing.
	batch := map[string]any{"agent_id": "a", "memories": []any{map[string]any{"type": "note", "content": note}, map[string]any{"type": "note", "content": note}}}
	wantQuota(t, s.request(t, "POST", "/v1/memories/batch", key, batch), memory.CodeQuotaTextBytes, 3*size+size/2)
	ids = append(ids, s.create(t, key, "a", "note", note).ID)

	// A patch that grows the content past the limit changes nothing; one
	// that shrinks it always passes.
	r := s.request(t, "PATCH", "/v1/memories/"+ids[0], key, map[string]any{"content": map[string]any{"content": strings.Repeat("x", size)}})
	wantQuota(t, r, memory.CodeQuotaTextBytes, 3*size+size/2)
	if v := s.get(t, key, ids[0]); v.Version != 1 {
		t.Errorf("a refused patch changed the memory to version %d", v.Version)
	}
	s.request(t, "PATCH", "/v1/memories/"+ids[0], key, map[string]any{"content": map[string]any{"content": "short"}}).must(t, http.StatusOK, nil)

	// The quota counts all agents of the user; a purge frees its bytes.
	used := 0
	for _, a := range s.agentsOf(t, key, 10) {
		used += int(a.TextBytes)
	}
	if used != 3*size-5 {
		t.Errorf("agents report %d bytes, want %d", used, 3*size-5)
	}
	wantQuota(t, s.request(t, "POST", "/v1/memories", key, map[string]any{"agent_id": "b", "type": "note", "content": note}), memory.CodeQuotaTextBytes, 3*size+size/2)
	s.request(t, "DELETE", "/v1/memories/"+ids[1]+"?purge=true", key, nil).must(t, http.StatusOK, nil)
	s.create(t, key, "b", "note", note)
}

// TestMemQuotasHoldUnderConcurrentWrites: writers racing for the last
// places never overshoot a quota.
func TestMemQuotasHoldUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{quotas: memory.Quotas{MemoriesPerAgent: 10, AgentsPerUser: 4}})
	_, key := s.user(t, "quota-race@example.com")
	var created, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two racing for memories of agent "a", one for a new agent.
			agentID := "a"
			if i%3 == 0 {
				agentID = fmt.Sprint("new-", i)
			}
			r := s.request(t, "POST", "/v1/memories/batch", key, notes(agentID, 2, "race"))
			switch {
			case r.status == http.StatusCreated:
				created.Add(1)
			case r.status == http.StatusForbidden && strings.HasPrefix(r.errorCode(), "quota_"):
				refused.Add(1)
			default:
				t.Errorf("status %d: %s", r.status, r.raw)
			}
		}()
	}
	wg.Wait()
	agents := s.agentsOf(t, key, 2)
	if len(agents) != 4 {
		t.Errorf("%d agents, quota 4", len(agents))
	}
	for _, a := range agents {
		if a.StoredMemories > 10 {
			t.Errorf("agent %s holds %d memories, quota 10", a.AgentID, a.StoredMemories)
		}
		if a.AgentID == "a" && a.StoredMemories != 10 {
			t.Errorf("agent a holds %d memories; the racing writers should have filled it to 10", a.StoredMemories)
		}
	}
	if created.Load()+refused.Load() != 30 {
		t.Errorf("%d created + %d refused of 30", created.Load(), refused.Load())
	}
}

func TestMemAgentsPagination(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, alice := s.user(t, "agents-a@example.com")
	_, bob := s.user(t, "agents-b@example.com")
	want := []string{"a1", "a2", "b.x", "c", "c-2", "d_1", "zz"}
	for _, id := range []string{"zz", "c", "a2", "d_1", "a1", "b.x", "c-2"} {
		s.create(t, alice, id, "note", map[string]any{"content": id})
	}
	s.create(t, bob, "bobs", "note", map[string]any{"content": "bob's"})

	for _, limit := range []int{1, 3, 7, 1000} {
		var got []string
		for _, a := range s.agentsOf(t, alice, limit) {
			got = append(got, a.AgentID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
	var page struct {
		Agents     []memory.AgentView `json:"agents"`
		NextCursor *string            `json:"next_cursor"`
	}
	s.request(t, "GET", "/v1/agents?limit=3", alice, nil).must(t, http.StatusOK, &page)
	if len(page.Agents) != 3 || page.NextCursor == nil || page.Agents[0].MemoryCount != 1 {
		t.Fatalf("first page: %+v", page)
	}
	// Another user's cursor only moves through that user's own agents.
	var bobs struct {
		Agents []memory.AgentView `json:"agents"`
	}
	s.request(t, "GET", "/v1/agents?cursor="+*page.NextCursor, bob, nil).must(t, http.StatusOK, &bobs)
	if len(bobs.Agents) != 1 || bobs.Agents[0].AgentID != "bobs" {
		t.Errorf("bob's listing: %+v", bobs.Agents)
	}
	if got := s.agentsOf(t, bob, 50); len(got) != 1 {
		t.Errorf("bob sees %d agents", len(got))
	}
	// Without parameters: the first page of the default size.
	var all struct {
		Agents     []memory.AgentView `json:"agents"`
		NextCursor *string            `json:"next_cursor"`
	}
	s.request(t, "GET", "/v1/agents", alice, nil).must(t, http.StatusOK, &all)
	if len(all.Agents) != len(want) || all.NextCursor != nil {
		t.Errorf("default page: %d agents, next %v", len(all.Agents), all.NextCursor)
	}
	for _, q := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=two", "limit"}, {"cursor=***", "cursor"}, {"cursor=bm90IGFuIGlkIQ", "cursor"},
	} {
		s.request(t, "GET", "/v1/agents?"+q.query, alice, nil).invalid(t, q.field)
	}
	s.request(t, "GET", "/v1/agents", "", nil).must(t, http.StatusUnauthorized, nil)
}
