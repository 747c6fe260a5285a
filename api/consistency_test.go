package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/commands"
)

// withToken sends a request carrying a consistency token.
func (s *stack) withToken(t testing.TB, method, path, bearer, token string, body string) response {
	t.Helper()
	var req *http.Request
	var err error
	if body == "" {
		req, err = http.NewRequest(method, s.srv.URL+path, nil)
	} else {
		req, err = http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set(api.ConsistencyTokenHeader, token)
	return s.sendAs(t, req)
}

// TestConsistencyTokenOnWrites: a write's response names its log position
// in Engram-Consistency-Token; a read that changes nothing carries none,
// and sending the token back is answered at once by the node that took the
// write.
func TestConsistencyTokenOnWrites(t *testing.T) {
	// Not parallel: it bounds a wall-clock time, which tests beside it on
	// the same two cores would stretch (docs/testing.md#keeping-the-suite-fast).
	s := newStack(t, stackOptions{fixedAuth: true})
	created := s.call("POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "the token names this write"}})
	expect(t, created, http.StatusCreated)
	token := created.header.Get(api.ConsistencyTokenHeader)
	head, err := s.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	position, err := strconv.ParseUint(strings.TrimPrefix(token, "v1."), 10, 64)
	if !strings.HasPrefix(token, "v1.") || err != nil || position == 0 || position > head {
		t.Fatalf("token %q after a write, want the write's position (head %d)", token, head)
	}
	listed := s.call("GET", "/v1/memories?agent_id=a1", aliceKey, nil)
	expect(t, listed, http.StatusOK)
	if got := listed.header.Get(api.ConsistencyTokenHeader); got != "" {
		t.Fatalf("a read carries the token %q", got)
	}
	start := time.Now()
	expect(t, s.withToken(t, "GET", "/v1/memories?agent_id=a1", aliceKey, token, ""), http.StatusOK)
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("the node that took the write waited %s for its own token", waited)
	}
}

func TestConsistencyTokenMalformedIs400(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	for _, token := range []string{"abc", "v1.", "v1.0", "v1.-3", "v2.5", "v1.5x", "V1.5", "v1.5.6"} {
		t.Run(token, func(t *testing.T) {
			r := s.withToken(t, "GET", "/v1/memories?agent_id=a1", aliceKey, token, "")
			wantError(t, r, http.StatusBadRequest, "invalid_consistency_token")
			if got, _ := r.details()["header"].(string); got != api.ConsistencyTokenHeader {
				t.Fatalf("details.header = %q, want %q", got, api.ConsistencyTokenHeader)
			}
		})
	}
}

// TestConsistencyTokenNotYetAppliedIs503: a token for a write in the log
// that this node's read models have not applied within the bound is 503
// not_yet_consistent with Retry-After; once they have, the same request
// succeeds.
func TestConsistencyTokenNotYetAppliedIs503(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, visibilityTimeout: 100 * time.Millisecond, consistencyWait: 200 * time.Millisecond})
	token := s.writeNobodyApplies(t)
	start := time.Now()
	r := s.withToken(t, "GET", "/v1/memories?agent_id=a1", aliceKey, token, "")
	wantError(t, r, http.StatusServiceUnavailable, "not_yet_consistent")
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("answered after %s, before the 200ms bound", waited)
	}
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 not_yet_consistent without Retry-After")
	}
	s.stopEngine = runInBackground(s.engine.Run)
	head, err := s.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.engine.WaitFor(t.Context(), head); err != nil {
		t.Fatal(err)
	}
	expect(t, s.withToken(t, "GET", "/v1/memories?agent_id=a1", aliceKey, token, ""), http.StatusOK)
}

// writeNobodyApplies stops the projection engine and writes a memory of
// alice's agent a1, which is stored but never applied: the write is 503
// write_not_yet_visible, and its token names a position in the log that
// this node's read models do not reach until the engine runs again.
func (s *stack) writeNobodyApplies(t *testing.T) string {
	t.Helper()
	s.stopEngine()
	r := s.call("POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "stored, never applied"}})
	wantError(t, r, http.StatusServiceUnavailable, commands.WriteNotYetVisibleCode)
	token := r.header.Get(api.ConsistencyTokenHeader)
	if token == "" {
		t.Fatal("a stored write without a consistency token")
	}
	return token
}

// farFutureToken names a position no log of the test reaches.
const farFutureToken = "v1.18446744073709551615"

// TestConsistencyTokenWaitsOnlyAfterAuthentication: a request that is not
// let in is refused at once whatever token it carries, and holds no
// in-flight slot: more such requests at once than the server serves at
// once get 401 (none waits for the token), and then a valid request goes
// through.
func TestConsistencyTokenWaitsOnlyAfterAuthentication(t *testing.T) {
	t.Parallel()
	const slots = 2
	s := newStack(t, stackOptions{fixedAuth: true, maxInFlight: slots, consistencyWait: 5 * time.Second})
	answers := make(chan response, 4*slots)
	for i := range cap(answers) {
		bearer := ""
		if i%2 == 1 {
			bearer = "not-a-key"
		}
		go func() {
			req, err := http.NewRequest("GET", s.srv.URL+"/v1/memories?agent_id=a1", nil)
			if err != nil {
				panic(err)
			}
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			req.Header.Set(api.ConsistencyTokenHeader, farFutureToken)
			answers <- s.sendAs(t, req)
		}()
	}
	refused := 0
	for range cap(answers) {
		// Two that overlap for an instant may find both slots taken.
		if r := <-answers; r.errorCode() != "server_busy" {
			wantError(t, r, http.StatusUnauthorized, "unauthorized")
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no request without a valid credential got its 401")
	}
	expect(t, s.call("GET", "/v1/memories?agent_id=a1", aliceKey, nil), http.StatusOK)
}

// TestConsistencyTokenBeyondTheLogIsRefused: a token naming a position
// past the log's head was issued by no response; it is 400 at once, not
// waited for until the bound.
func TestConsistencyTokenBeyondTheLogIsRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, consistencyWait: 5 * time.Second})
	head, err := s.store.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"v1." + strconv.FormatUint(head+1, 10), farFutureToken} {
		t.Run(token, func(t *testing.T) {
			for _, req := range []struct{ method, path, body string }{
				{"GET", "/v1/memories?agent_id=a1", ""},
				{"POST", "/v1/memories", `{"agent_id":"a1","type":"note","content":{"content":"never written"}}`},
				{"POST", "/v1/auth/login", `{"email":"nobody@example.com","password":"wrong password"}`},
			} {
				r := s.withToken(t, req.method, req.path, aliceKey, token, req.body)
				wantError(t, r, http.StatusBadRequest, "consistency_token_ahead_of_log")
				if got, _ := r.details()["header"].(string); got != api.ConsistencyTokenHeader {
					t.Fatalf("%s %s: details.header = %q, want %q", req.method, req.path, got, api.ConsistencyTokenHeader)
				}
			}
		})
	}
	if after, err := s.store.Head(t.Context()); err != nil || after != head {
		t.Fatalf("the log's head moved from %d to %d (%v): a refused write was stored", head, after, err)
	}
}

// TestConsistencyTokenWaitsAreBoundedPerClient: one client may have only
// so many requests waiting for a token at once; more are refused at once
// (429 too_many_consistency_waits with Retry-After), while another
// client's requests, with or without the token, are served, and the
// waiting ones succeed once the node applies the write.
func TestConsistencyTokenWaitsAreBoundedPerClient(t *testing.T) {
	t.Parallel()
	const bound, sent = 2, 5
	s := newStack(t, stackOptions{fixedAuth: true, visibilityTimeout: 100 * time.Millisecond, consistencyWait: 30 * time.Second, maxConsistencyWaits: bound})
	token := s.writeNobodyApplies(t)

	type answer struct {
		who string
		r   response
	}
	answers := make(chan answer, sent+1)
	get := func(who, bearer string) {
		req, err := http.NewRequest("GET", s.srv.URL+"/v1/memories?agent_id=a1", nil)
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set(api.ConsistencyTokenHeader, token)
		answers <- answer{who, s.sendAs(t, req)}
	}
	for range sent {
		go get("alice", aliceKey)
	}
	// The waits last until the engine runs again, so exactly bound of
	// alice's requests wait and the others are refused.
	for range sent - bound {
		select {
		case a := <-answers:
			wantError(t, a.r, http.StatusTooManyRequests, "too_many_consistency_waits")
			if a.r.header.Get("Retry-After") == "" {
				t.Fatal("429 too_many_consistency_waits without Retry-After")
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%d requests of one client wait for a token at once; want at most %d", sent, bound)
		}
	}
	expect(t, s.call("GET", "/v1/agents", bobKey, nil), http.StatusOK)
	go get("bob", bobKey) // bob's own bound is untouched: he waits too

	s.stopEngine = runInBackground(s.engine.Run)
	for range bound + 1 {
		a := <-answers
		if a.r.status != http.StatusOK {
			t.Fatalf("%s waiting for the token: %d %s, want 200 once the write is applied", a.who, a.r.status, a.r.raw)
		}
	}
}

// TestClientWaitsForWriteNotYetVisible goes through the Go client, the
// real API and stack: with the projection engine stopped nothing applies a
// batch, so it is stored and answered 503 write_not_yet_visible, and the
// client.Error carries the write's consistency token and Retry-After.
// WaitVisible does not return while nothing applies it, and returns once
// the restarted engine has; the batch is then there exactly once.
func TestClientWaitsForWriteNotYetVisible(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, visibilityTimeout: 200 * time.Millisecond, consistencyWait: 200 * time.Millisecond})
	c := client.New(s.srv.URL+"/v1", aliceKey)
	ctx := t.Context()
	s.stopEngine()

	items := make([]client.BatchMemory, 3)
	var want []string
	for i := range items {
		want = append(want, fmt.Sprintf("stored before it is visible %d", i))
		items[i] = client.BatchMemory{Type: "notes", Content: client.NoteContent{Content: want[i], NoteType: "observation"}}
	}
	_, err := c.CreateMemories(ctx, client.BatchRequest{AgentID: "a1", Memories: items})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != client.CodeWriteNotYetVisible || e.RetryAfter != time.Second {
		t.Fatalf("batch with nothing applying it: %v, want 503 %s with Retry-After 1", err, client.CodeWriteNotYetVisible)
	}
	head, err := s.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.ConsistencyToken != "v1."+strconv.FormatUint(head, 10) {
		t.Fatalf("token %q, want the stored batch's position %d", e.ConsistencyToken, head)
	}

	bounded, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if err := c.WaitVisible(bounded, e.ConsistencyToken); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitVisible while nothing applies the write: %v, want the deadline", err)
	}

	s.stopEngine = runInBackground(s.engine.Run)
	if err := c.WaitVisible(ctx, e.ConsistencyToken); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListMemories(ctx, client.ListMemoriesOptions{AgentID: "a1", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range page.Memories {
		var note client.NoteContent
		if err := m.DecodeContent(&note); err != nil {
			t.Fatal(err)
		}
		got = append(got, note.Content)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("after the wait the agent holds %q, want the batch once: %q", got, want)
	}
}
