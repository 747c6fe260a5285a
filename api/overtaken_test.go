package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// overtaker is the event log as a node shares it with another node whose
// writes always win the race: while a stream is armed, each append to it
// that expects a version finds one event of the other node appended just
// before, so it finds the stream moved on, every time. The other node's
// event is a real one that the projections apply.
type overtaker struct {
	domain.EventStore

	mu     sync.Mutex
	stream string                // the armed stream; empty: none
	event  func() domain.Payload // the other node's next event
	count  int                   // events the other node appended
}

// arm makes the other node write event before each append to stream
// until disarm, which returns how many events it wrote.
func (o *overtaker) arm(stream string, event func() domain.Payload) (disarm func() int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stream, o.event, o.count = stream, event, 0
	return func() int {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.stream = ""
		return o.count
	}
}

func (o *overtaker) overtake(ctx context.Context, stream string, expected int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if stream != o.stream || expected == domain.ExpectAny {
		return nil
	}
	ev, err := domain.MarshalEvent(o.event(), domain.Metadata{
		Actor: domain.Actor{Kind: domain.ActorSystem, ID: "other-node"}, RequestID: "other-node", Source: domain.SourceSystem,
	})
	if err != nil {
		return err
	}
	if _, err := o.EventStore.Append(ctx, stream, domain.ExpectAny, []domain.NewEvent{ev}); err != nil {
		return err
	}
	o.count++
	return nil
}

func (o *overtaker) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	if err := o.overtake(ctx, stream, expected); err != nil {
		return domain.AppendResult{}, err
	}
	return o.EventStore.Append(ctx, stream, expected, events)
}

func (o *overtaker) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	for _, p := range parts {
		if err := o.overtake(ctx, p.Stream, p.Expected); err != nil {
			return nil, err
		}
	}
	return o.EventStore.AppendStreams(ctx, parts)
}

// TestWritesOvertakenByAnotherNode: on every route that decides on an
// agent's streams, a write that another node's writes keep overtaking is
// refused and stores nothing. A write to the agent's memory stream decides
// again, up to the bound (here 2, the server's 100), then answers 409
// concurrent_writes; a write to its cognition stream, which the node holds
// for the agent while it decides, answers 409 concurrent_processing at
// the first overtaking. The MCP tools answer the same codes.
func TestWritesOvertakenByAnotherNode(t *testing.T) {
	t.Parallel()
	const attempts = 2
	over := &overtaker{}
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, agentAttempts: attempts, appends: func(log domain.EventStore) domain.EventStore {
		over.EventStore = log
		return over
	}})
	ctx := context.Background()
	const agent = "raced"
	notes := s.seed(alice, agent, 2)
	bystander, victim := notes[0], notes[1]
	protected := s.create(t, aliceKey, agent, "note", map[string]any{"content": "kept for good"}).ID
	s.must(http.StatusOK, "POST", "/v1/memories/"+protected+"/protect", aliceKey, nil)
	forgotten := s.create(t, aliceKey, agent, "note", map[string]any{"content": "let go"}).ID
	s.must(http.StatusOK, "DELETE", "/v1/memories/"+forgotten, aliceKey, nil)
	s.raws(t, aliceKey, agent, append(goldenRaw, "I think code review always catches bugs")...)
	s.process(t, aliceKey, agent, map[string]any{"force": true})
	pending := s.suggestions(t, aliceKey, agent, "")
	if len(pending) < 4 {
		t.Fatalf("%d suggestions, want 4 to accept, reject, dismiss and reject over MCP", len(pending))
	}
	mcp := s.mcpClient(t, aliceKey, "", "")
	schemas := toolSchemas(t, mcp)
	mcpCall := func(tool string, args map[string]any) func(t *testing.T) (string, string) {
		return func(t *testing.T) (string, string) {
			c := callTool(t, mcp, schemas, tool, args)
			e, _ := c.data["error"].(map[string]any)
			message, _ := e["message"].(string)
			return c.errorCode(), message
		}
	}
	s.create(t, aliceKey, "source", "note", map[string]any{"content": "to import"})
	_, export := s.exportAgent(t, aliceKey, "source", "")
	a, ok, err := s.memories.Agent(ctx, alice, agent)
	if err != nil || !ok {
		t.Fatalf("agent %s: %v %v", agent, ok, err)
	}
	memoryStream, memoryEvent := memory.AgentStream(alice, agent), func() domain.Payload {
		return memory.MemoryVerified{AgentRef: memory.AgentRef{UserID: alice, AgentID: agent}, MemoryID: bystander, Strength: 1, VerifiedAt: time.Now().UTC(), Reason: "the other node"}
	}
	cognitionStream, cognitionEvent := processing.Stream(alice, agent), func() domain.Payload {
		return processing.ConfigChanged{AgentRef: processing.AgentRef{UserID: alice, AgentID: agent, AgentCreatedAt: a.CreatedAt}, Config: processing.DefaultConfig(), ChangedAt: time.Now().UTC()}
	}
	// overtaken runs one refused write: armed, the other node overtakes
	// its appends to the stream; it must fail with code, saying message,
	// after want overtakings, having stored nothing.
	overtaken := func(t *testing.T, stream string, send func(t *testing.T) (code, message string)) {
		t.Helper()
		event, code, message, want := memoryEvent, "concurrent_writes", fmt.Sprintf("changed %d times", attempts), attempts
		if stream == cognitionStream {
			event, code, message, want = cognitionEvent, "concurrent_processing", "processing state changed while this request was decided", 1
		}
		head := s.head(t)
		disarm := over.arm(stream, event)
		gotCode, gotMessage := send(t)
		n := disarm()
		if gotCode != code || !strings.Contains(gotMessage, message) || n != want {
			t.Fatalf("answer %s %q after %d overtakings; want %s saying %q after %d", gotCode, gotMessage, n, code, message, want)
		}
		s.onlyOtherNodeSince(t, head)
	}
	call := func(method, path string, body any, contains ...string) func(t *testing.T) (string, string) {
		return func(t *testing.T) (string, string) {
			r := s.request(t, method, path, aliceKey, body)
			if r.status != http.StatusConflict {
				t.Fatalf("%s %s: %d, want 409: %s", method, path, r.status, r.raw)
			}
			for _, c := range contains {
				if !strings.Contains(r.errorMessage(), c) {
					t.Fatalf("%s %s: message %q does not say %q", method, path, r.errorMessage(), c)
				}
			}
			return r.errorCode(), r.errorMessage()
		}
	}
	note := map[string]any{"type": "note", "content": map[string]any{"content": "lost the race"}}
	for _, c := range []struct {
		name   string
		stream string
		send   func(t *testing.T) (code, message string)
	}{
		{"create", memoryStream, call("POST", "/v1/memories", map[string]any{"agent_id": agent, "type": "note", "content": map[string]any{"content": "lost the race"}})},
		{"create a batch", memoryStream, call("POST", "/v1/memories/batch", map[string]any{"agent_id": agent, "memories": []any{note, note}})},
		{"patch", memoryStream, call("PATCH", "/v1/memories/"+victim, map[string]any{"tags": []string{"raced"}})},
		{"forget", memoryStream, call("DELETE", "/v1/memories/"+victim, nil)},
		{"purge", memoryStream, call("DELETE", "/v1/memories/"+victim+"?purge=true", nil)},
		{"protect", memoryStream, call("POST", "/v1/memories/"+victim+"/protect", nil)},
		{"unprotect", memoryStream, call("POST", "/v1/memories/"+protected+"/unprotect", nil)},
		{"recover", memoryStream, call("POST", "/v1/memories/"+forgotten+"/recover", nil)},
		{"weaken", memoryStream, call("POST", "/v1/memories/"+victim+"/weaken", map[string]any{"by": 0.3})},
		{"verify", memoryStream, call("POST", "/v1/memories/"+victim+"/verify", map[string]any{"reason": "seen again"})},
		{"agent settings", memoryStream, call("PATCH", "/v1/agents/"+agent+"/settings", map[string]any{"lint_rules": map[string]any{"min_length": 11}})},
		{"delete the agent", memoryStream, call("DELETE", "/v1/agents/"+agent, nil)},
		{"accept a suggestion", memoryStream, call("POST", "/v1/suggestions/"+pending[0].ID+"/accept", nil)},
		{"sync push", memoryStream, call("POST", "/v1/sync/events", map[string]any{"agent_id": agent, "events": []any{pushedNote("pushed too late")}}, "nothing was stored")},
		{"import", memoryStream, func(t *testing.T) (string, string) {
			r := s.importAgent(t, aliceKey, agent, export)
			if r.status != http.StatusConflict || !strings.Contains(r.errorMessage(), "nothing was stored") {
				t.Fatalf("import: %d %s", r.status, r.raw)
			}
			return r.errorCode(), r.errorMessage()
		}},
		{"MCP add_memory", memoryStream, mcpCall("add_memory", map[string]any{"agent_id": agent, "type": "note", "content": map[string]any{"content": "lost the race"}})},

		{"processing configuration", cognitionStream, call("PATCH", "/v1/agents/"+agent+"/processing", map[string]any{"auto_promote": false})},
		{"process", cognitionStream, call("POST", "/v1/agents/"+agent+"/process", map[string]any{"force": true})}, // the agent does not auto-promote
		{"process to exhaustion", cognitionStream, call("POST", "/v1/agents/"+agent+"/process/exhaust", map[string]any{"auto_promote": false})},
		{"reject a suggestion", cognitionStream, call("POST", "/v1/suggestions/"+pending[1].ID+"/reject", nil)},
		{"dismiss a suggestion", cognitionStream, call("POST", "/v1/suggestions/"+pending[2].ID+"/dismiss", nil)},
		{"MCP review_suggestions", cognitionStream, mcpCall("review_suggestions", map[string]any{"agent_id": agent, "action": "reject", "suggestion_id": pending[3].ID})},
	} {
		t.Run(c.name, func(t *testing.T) { overtaken(t, c.stream, c.send) })
	}
}

// onlyOtherNodeSince fails unless every event after head is the other
// node's: the refused request stored nothing.
func (s *stack) onlyOtherNodeSince(t testing.TB, head uint64) {
	t.Helper()
	events, err := s.store.ReadAll(context.Background(), head, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.RequestID != "other-node" {
			t.Fatalf("the refused request stored %s on %s", e.Type, e.Stream)
		}
	}
}
