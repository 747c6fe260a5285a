package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/llm"
)

// chatServer is an OpenAI-compatible chat endpoint on loopback that
// answers with a fixed message content and records the requests.
type chatServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
}

func newChatServer(t *testing.T, status int, delay time.Duration, content string) *chatServer {
	cs := &chatServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "bad path or key", http.StatusNotFound)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		cs.mu.Lock()
		cs.requests = append(cs.requests, body)
		cs.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			_, _ = w.Write([]byte(`{"error":{"message":"boom","type":"server_error"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": "test-chat",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
		})
	}))
	t.Cleanup(cs.Close)
	return cs
}

func TestChatProposeOverHTTP(t *testing.T) {
	batch := []processing.Source{{ID: "e1", Text: "Deployed v2: tests caught a bug"}, {ID: "e2", Text: "Rolled back: missing migration"}, {ID: "e3", Text: strings.Repeat("x", 900)}}
	valid := `[{"content":{"statement":"Running migrations before deploys prevents rollbacks","belief_type":"causal"},"confidence":0.8,"source_ids":["e1","e2","e3"]}]`
	cases := []struct {
		name        string
		status      int
		delay       time.Duration
		content     string
		items       int
		malformed   int
		unavailable bool
	}{
		{"valid JSON", http.StatusOK, 0, valid, 1, 0, false},
		{"valid JSON in a fence", http.StatusOK, 0, "```json\n" + valid + "\n```", 1, 0, false},
		{"malformed JSON", http.StatusOK, 0, `[{"content": {"statement": "unterminated`, 0, 1, false},
		{"prose instead of JSON", http.StatusOK, 0, "I could not find any beliefs.", 0, 1, false},
		{"item citing an unknown source", http.StatusOK, 0, `[{"content":{"statement":"Something plausible"},"source_ids":["e9"]}]`, 0, 1, false},
		{"server error", http.StatusInternalServerError, 0, "", 0, 0, true},
		{"timeout", http.StatusOK, 2 * time.Second, valid, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newChatServer(t, c.status, c.delay, c.content)
			chat, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "test-chat", Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			items, errs, err := chat.Propose(context.Background(), processing.EpisodeToBelief, batch, nil)
			if c.unavailable {
				if !errors.Is(err, llm.ErrUnavailable) {
					t.Fatalf("err = %v, want ErrUnavailable", err)
				}
				if time.Since(start) > 1500*time.Millisecond {
					t.Errorf("took %v: the timeout did not bound the request", time.Since(start))
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(items) != c.items || len(errs) != c.malformed {
				t.Fatalf("items=%d errs=%v, want %d items and %d errors", len(items), errs, c.items, c.malformed)
			}
			for _, e := range errs {
				if !errors.Is(e, processing.ErrMalformedOutput) {
					t.Errorf("%v does not wrap ErrMalformedOutput", e)
				}
			}
			req := srv.requests[0]
			msgs := req["messages"].([]any)
			user := msgs[1].(map[string]any)["content"].(string)
			if req["model"] != "test-chat" || !strings.Contains(user, "[e1] Deployed v2") || strings.Contains(user, strings.Repeat("x", llm.SourceChars+1)) {
				t.Errorf("request: model %v, user prompt %q", req["model"], user)
			}
		})
	}
}

func TestChatNeedsAModel(t *testing.T) {
	if _, err := llm.New(llm.Options{}); err == nil {
		t.Fatal("no model accepted")
	}
}
