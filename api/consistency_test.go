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

// TestConsistencyTokenNotYetAppliedIs503: a token this node's read models
// have not reached within the bound is 503 not_yet_consistent with
// Retry-After; once a write reaches the position, the same request
// succeeds.
func TestConsistencyTokenNotYetAppliedIs503(t *testing.T) {
	s := newStack(t, stackOptions{fixedAuth: true, consistencyWait: 200 * time.Millisecond})
	head, err := s.store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ahead := "v1." + strconv.FormatUint(head+1, 10)
	start := time.Now()
	r := s.withToken(t, "GET", "/v1/memories?agent_id=a1", aliceKey, ahead, "")
	wantError(t, r, http.StatusServiceUnavailable, "not_yet_consistent")
	if waited := time.Since(start); waited < 200*time.Millisecond || waited > 3*time.Second {
		t.Fatalf("waited %s, want about the 200ms bound", waited)
	}
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 not_yet_consistent without Retry-After")
	}
	s.create(t, aliceKey, "a1", "note", map[string]any{"content": "reaches the position"})
	expect(t, s.withToken(t, "GET", "/v1/memories?agent_id=a1", aliceKey, ahead, ""), http.StatusOK)
}

// TestClientWaitsForWriteNotYetVisible goes through the Go client, the
// real API and stack: with the projection engine stopped nothing applies a
// batch, so it is stored and answered 503 write_not_yet_visible, and the
// client.Error carries the write's consistency token and Retry-After.
// WaitVisible does not return while nothing applies it, and returns once
// the restarted engine has; the batch is then there exactly once.
func TestClientWaitsForWriteNotYetVisible(t *testing.T) {
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
