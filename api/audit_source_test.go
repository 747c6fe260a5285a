package api_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/api"
)

// Events a sync push or an import copies into the log are audited with
// source sync and import, not with the interface that carried them (both
// came over REST here); a write through REST says api.
func TestAuditSourceOfSyncAndImport(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	var written struct {
		ID string `json:"id"`
	}
	s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "written"}}).must(t, http.StatusCreated, &written)
	pushed := uuid.NewString()
	s.push(t, aliceKey, "claire", syncEvent("MemoryCreated", map[string]any{"memory_id": pushed, "type": "note", "content": map[string]any{"content": "pushed"}})).must(t, http.StatusOK, nil)
	status, export := s.exportAgent(t, aliceKey, "claire", "")
	if status != http.StatusOK {
		t.Fatalf("export: %d %s", status, export)
	}
	s.importAgent(t, aliceKey, "copy", export).must(t, http.StatusOK, nil)

	claire := auditSources(t, s, "claire")
	for _, c := range []struct{ name, got, want string }{
		{"REST create", claire["create "+written.ID], "api"},
		{"pushed create", claire["create "+pushed], "sync"},
	} {
		if c.got != c.want {
			t.Errorf("%s: source %q, want %q (%v)", c.name, c.got, c.want, claire)
		}
	}
	// The import maps the ids claire holds; every entry of the copy is
	// the import's.
	imported := auditSources(t, s, "copy")
	creates := 0
	for entry, source := range imported {
		if source != "import" {
			t.Errorf("imported %s: source %q, want import", entry, source)
		}
		if strings.HasPrefix(entry, "create ") {
			creates++
		}
	}
	if _, ok := imported["import "]; !ok || creates != 2 {
		t.Fatalf("the copy's audit %v: want the import and 2 creates", imported)
	}
}

// A client relaying another interface over the API declares it with
// Engram-Source (engram mcp --cloud sends mcp): its writes are audited
// with it. Only api and mcp may be claimed; another value is refused and
// names the header.
func TestAuditSourceAClientDeclares(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	create := func(source, content string) response {
		return s.sendAs(t, declaring(t, s, "POST", "/v1/memories", source, map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": content}}))
	}
	ids := map[string]string{} // memory id → the source declared
	for _, source := range []string{"", "api", "mcp"} {
		ids[create(source, "declared "+source).must(t, http.StatusCreated, nil).str("id")] = source
	}
	// An empty Engram-Source declares nothing, and the document allows it
	// (schemathesis 4.32 sent one, which the document refused).
	empty := declaring(t, s, "POST", "/v1/memories", "", map[string]any{"agent_id": "claire", "type": "note", "content": map[string]any{"content": "declared empty"}})
	empty.Header.Set(api.SourceHeader, "")
	ids[s.sendAs(t, empty).must(t, http.StatusCreated, nil).str("id")] = ""
	for _, claimed := range []string{"system", "cli", "sync", "import", "MCP", "anything"} {
		create(claimed, "refused").invalid(t, api.SourceHeader)
	}
	audited := auditSources(t, s, "claire")
	for id, declared := range ids {
		want := cmp.Or(declared, "api")
		if got := audited["create "+id]; got != want {
			t.Errorf("a write declaring %q is audited with source %q, want %q (%v)", declared, got, want, audited)
		}
	}
}

// auditSources reads alice's audit of agent: the source of each entry by
// its operation and memory id ("create <id>").
func auditSources(t *testing.T, s *stack, agent string) map[string]string {
	t.Helper()
	var page struct {
		Entries []struct {
			Operation string `json:"operation"`
			MemoryID  string `json:"memory_id"`
			Source    string `json:"source"`
		} `json:"entries"`
	}
	s.request(t, "GET", "/v1/agents/"+agent+"/audit?limit=1000", aliceKey, nil).must(t, http.StatusOK, &page)
	sources := map[string]string{}
	for _, e := range page.Entries {
		sources[e.Operation+" "+e.MemoryID] = e.Source
	}
	return sources
}

// OpenAI's routes append no event and answer in OpenAI's shape, so
// Engram-Source means nothing there: a value the Engram routes refuse is
// ignored (schemathesis found POST /v1/embeddings answering in Engram's
// envelope).
func TestOpenAIRoutesIgnoreEngramSource(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/embeddings", map[string]any{"input": "the heron at the weir", "model": "default"}},
		{"GET", "/v1/models", nil},
	} {
		resp, err := http.DefaultClient.Do(declaring(t, s, c.method, c.path, "anything", c.body))
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Object string            `json:"object"`
			Data   []json.RawMessage `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || answer.Object != "list" || len(answer.Data) == 0 {
			t.Errorf("%s %s with Engram-Source: anything: %d %+v %v", c.method, c.path, resp.StatusCode, answer, err)
		}
	}
}

// declaring is a request of alice's that declares source in Engram-Source
// (none when empty), with body as JSON when not nil.
func declaring(t *testing.T, s *stack, method, path, source string, body any) *http.Request {
	t.Helper()
	var content []byte
	if body != nil {
		content, _ = json.Marshal(body)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	if source != "" {
		req.Header.Set(api.SourceHeader, source)
	}
	return req
}
