package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// interloper is the event log shared with another node: once armed with
// a stream and a request, the next append to that stream that expects a
// version first lets the other node serve the whole request, then goes
// on (and finds the stream moved on, if the request wrote to it).
type interloper struct {
	domain.EventStore

	mu     sync.Mutex
	stream string
	run    func()
}

func (i *interloper) arm(stream string, run func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stream, i.run = stream, run
}

// before runs the armed request, once, before an append to its stream.
func (i *interloper) before(stream string, expected int64) {
	i.mu.Lock()
	run := i.run
	if stream != i.stream || expected == domain.ExpectAny {
		run = nil
	}
	if run != nil {
		i.stream, i.run = "", nil
	}
	i.mu.Unlock()
	if run != nil {
		run()
	}
}

func (i *interloper) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	i.before(stream, expected)
	return i.EventStore.Append(ctx, stream, expected, events)
}

func (i *interloper) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	for _, p := range parts {
		i.before(p.Stream, p.Expected)
	}
	return i.EventStore.AppendStreams(ctx, parts)
}

// secondNode serves the stack's routes with another node's pipeline
// (s.node): the same log and read models, no lock in common with the
// stack's server.
func (s *stack) secondNode(t *testing.T) *httptest.Server {
	t.Helper()
	mine := s.pipeline
	s.pipeline = s.node(t)
	handler := s.newHandler()
	s.pipeline = mine
	srv := httptest.NewServer(validatingHandler(t, loadOpenAPI(t), handler))
	t.Cleanup(srv.Close)
	return srv
}

// callOn sends a JSON request to another node's server and returns its
// status and body. It runs inside an armed append, off the test's
// goroutine, where t.Fatal may not be called: the caller checks the error.
func callOn(srv *httptest.Server, method, path, bearer string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := srv.Client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, raw, err
}

// Two nodes process one agent with auto_promote at once: the request
// whose decision the other's overtakes is refused with 409
// concurrent_processing and stores nothing, so the agent holds exactly
// the memories the answered request says it created (one per item), not
// a second copy of them. An exhaust run overtaken after its first cycle
// answers the cycles it stored (convergence_reason
// concurrent_processing) instead of a 409 that would say it stored
// nothing.
func TestConcurrentAutoPromotingRequestsStoreOnlyTheAnsweredMemories(t *testing.T) {
	t.Parallel()
	in := &interloper{}
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, appends: func(log domain.EventStore) domain.EventStore {
		in.EventStore = log
		return in
	}})
	second := s.secondNode(t)
	for _, c := range []struct {
		name, path string
		body       map[string]any
		// created is what the answer says it created.
		created func(t *testing.T, raw []byte) int
	}{
		{"process", "/process", map[string]any{"force": true}, func(t *testing.T, raw []byte) int {
			var out struct{ Data passesJSON }
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, p := range out.Data.Passes {
				n += len(p.Created)
			}
			return n
		}},
		{"exhaust", "/process/exhaust", map[string]any{"max_cycles": 3}, func(t *testing.T, raw []byte) int {
			var out struct {
				Data struct {
					TotalPromotions int `json:"total_promotions"`
				}
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			return out.Data.TotalPromotions
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := "twice-" + c.name
			s.raws(t, aliceKey, agent, goldenRaw...)
			s.must(http.StatusOK, "PATCH", "/v1/agents/"+agent+"/processing", aliceKey, map[string]any{"auto_promote": true})
			body, _ := json.Marshal(c.body)
			// The other node's request, served while this node's waits to
			// append its passes.
			var status int
			var raw []byte
			var otherErr error
			in.arm(processing.Stream(alice, agent), func() {
				status, raw, otherErr = callOn(second, "POST", "/v1/agents/"+agent+c.path, aliceKey, body)
			})
			refused := s.request(t, "POST", "/v1/agents/"+agent+c.path, aliceKey, c.body)
			if otherErr != nil || status != http.StatusOK {
				t.Fatalf("the other node's request: %d %v %s", status, otherErr, raw)
			}
			wantError(t, refused, http.StatusConflict, "concurrent_processing")
			created := c.created(t, raw)
			if held := s.promoted(t, agent); created == 0 || held != created {
				t.Fatalf("the answered request created %d memories; the agent holds %d: %s", created, held, raw)
			}
		})
	}
	t.Run("exhaust overtaken after its first cycle", func(t *testing.T) {
		const agent = "overtaken-exhaust"
		s.raws(t, aliceKey, agent, goldenRaw...)
		var status int
		var otherErr error
		// The first cycle appends undisturbed; before the second's append
		// the other node changes the agent's processing configuration.
		in.arm(processing.Stream(alice, agent), func() {
			in.arm(processing.Stream(alice, agent), func() {
				status, _, otherErr = callOn(second, "PATCH", "/v1/agents/"+agent+"/processing", aliceKey, []byte(`{"suggestion_expiry_hours": 100}`))
			})
		})
		var out struct {
			CyclesCompleted   int    `json:"cycles_completed"`
			TotalPromotions   int    `json:"total_promotions"`
			Converged         bool   `json:"converged"`
			ConvergenceReason string `json:"convergence_reason"`
		}
		s.request(t, "POST", "/v1/agents/"+agent+"/process/exhaust", aliceKey, map[string]any{"max_cycles": 5}).must(t, http.StatusOK, &out)
		if otherErr != nil || status != http.StatusOK {
			t.Fatalf("the other node's request: %d %v", status, otherErr)
		}
		if out.CyclesCompleted != 1 || out.Converged || out.ConvergenceReason != processing.ReasonConcurrentProcessing {
			t.Fatalf("exhaust answered %+v; want its one stored cycle, not converged, reason concurrent_processing", out)
		}
		if held := s.promoted(t, agent); out.TotalPromotions == 0 || held != out.TotalPromotions {
			t.Fatalf("the run promoted %d memories; the agent holds %d", out.TotalPromotions, held)
		}
	})
}

// promoted counts the memories of the agent that processing can make.
func (s *stack) promoted(t *testing.T, agent string) int {
	t.Helper()
	page, err := s.memories.ListMemories(context.Background(), memory.ListQuery{UserID: alice, AgentID: agent, Limit: 100,
		Types: []memory.Type{memory.Episode, memory.Note, memory.Belief, memory.Goal, memory.Relationship, memory.Drive, memory.Value}})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Memories)
}
