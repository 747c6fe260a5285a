package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// TestWriteRulesHoldForDirectWritesAndPushesAlike lists each rule of the
// API's memory writes once and breaks it through both routes that write
// memories: the direct route (POST /v1/memories, PATCH or DELETE
// /v1/memories/{id}) and a sync push (POST /v1/sync/events) of the event
// the direct write would record. Both are refused with the same status and
// code, and neither appends anything. Where a push legitimately answers
// otherwise (it replays a history, docs/api.md#sync says why), the case
// names the push's own answer.
func TestWriteRulesHoldForDirectWritesAndPushesAlike(t *testing.T) {
	t.Parallel()
	log := &refuser{}
	s := newStack(t, stackOptions{quotas: memory.Quotas{MemoriesPerAgent: 3, AgentsPerUser: 3, TextBytesPerUser: 3000},
		appends: func(l domain.EventStore) domain.EventStore {
			log.EventStore = l
			return log
		}})
	ctx := context.Background()
	users := 0
	createNote := func(t *testing.T, userID, agentID string) string {
		c, err := s.memCmds.Create(ctx, metaFor(userID), agentID, commands.MemoryInput{Type: "note", Content: json.RawMessage(`{"content":"kept"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	// created is a direct create of a memory of the agent "a" and the
	// push of its MemoryCreated.
	type write struct {
		method, path string
		body         any
		push         []commands.SyncEvent
	}
	created := func(fields map[string]any) write {
		body := map[string]any{"agent_id": "a"}
		payload := map[string]any{"memory_id": uuid.NewString()}
		for k, v := range fields {
			body[k], payload[k] = v, v
		}
		return write{"POST", "/v1/memories", body, []commands.SyncEvent{syncEvent("MemoryCreated", payload)}}
	}
	note := func(text string, more ...any) write {
		fields := map[string]any{"type": "note", "content": map[string]any{"content": text}}
		for i := 0; i+1 < len(more); i += 2 {
			fields[more[i].(string)] = more[i+1]
		}
		return created(fields)
	}
	for _, tc := range []struct {
		name string
		// write builds both writes for the fresh user userID, after
		// preparing the user's state.
		write  func(t *testing.T, userID string) write
		status int
		code   string
		// pushStatus and pushCode, when set, are the push's answer
		// where it differs from the direct write's, for the reason
		// docs/api.md gives.
		pushStatus int
		pushCode   string
	}{
		{"a type name nobody spells", func(*testing.T, string) write {
			return created(map[string]any{"type": "nots", "content": map[string]any{"content": "x"}})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a type spelt as an event type", func(*testing.T, string) write {
			return created(map[string]any{"type": "MemoryCreated", "content": map[string]any{"content": "x"}})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a text field over 32,000 characters", func(*testing.T, string) write {
			return note(strings.Repeat("x", 32_001))
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a null item of a content list", func(*testing.T, string) write {
			return created(map[string]any{"type": "episode", "content": map[string]any{"objective": "deploy", "outcome": "failed", "lessons": []any{nil}}})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a content field its type does not have", func(*testing.T, string) write {
			return created(map[string]any{"type": "note", "content": map[string]any{"content": "x", "colour": "blue"}})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"an empty tag", func(*testing.T, string) write {
			return note("tagged", "tags", []string{""})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a created_at in the future", func(*testing.T, string) write {
			return note("from the future", "created_at", time.Now().Add(24*time.Hour).UTC())
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a memory over the agent's memory quota", func(t *testing.T, userID string) write {
			for range 3 {
				createNote(t, userID, "a")
			}
			return note("a fourth")
		}, http.StatusForbidden, memory.CodeQuotaMemoriesPerAgent, 0, ""},
		{"an agent over the user's agent quota", func(t *testing.T, userID string) write {
			for _, agent := range []string{"b", "c", "d"} {
				createNote(t, userID, agent)
			}
			return note("a fourth agent")
		}, http.StatusForbidden, memory.CodeQuotaAgents, 0, ""},
		{"content past the user's text quota", func(*testing.T, string) write {
			return note(strings.Repeat("x", 3_500))
		}, http.StatusForbidden, memory.CodeQuotaTextBytes, 0, ""},
		{"derived_from naming a memory that does not exist", func(*testing.T, string) write {
			return note("derived", "derived_from", []string{"note:" + uuid.NewString()})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"derived_from naming a memory of another agent", func(t *testing.T, userID string) write {
			return note("derived", "derived_from", []string{"note:" + createNote(t, userID, "b")})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"derived_from naming another user's memory", func(t *testing.T, _ string) write {
			users++
			other, _ := s.user(t, fmt.Sprintf("write-rules-other-%d@example.com", users))
			return note("derived", "derived_from", []string{"note:" + createNote(t, other, "a")})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"derived_from naming a purged memory", func(t *testing.T, userID string) write {
			id := createNote(t, userID, "a")
			if err := s.memCmds.Purge(ctx, metaFor(userID), id, nil); err != nil {
				t.Fatal(err)
			}
			return note("derived", "derived_from", []string{"note:" + id})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a belief without derived_from in an active agent", func(t *testing.T, userID string) write {
			createNote(t, userID, "a")
			if _, err := s.memCmds.PatchSettings(ctx, metaFor(userID), "a", json.RawMessage(`{"stack_state":"active"}`)); err != nil {
				t.Fatal(err)
			}
			return created(map[string]any{"type": "belief", "content": map[string]any{"statement": "unfounded", "confidence": 0.5}})
		}, http.StatusBadRequest, memory.CodeProvenanceViolation, 0, ""},
		{"a memory created in an agent in maintenance", func(t *testing.T, userID string) write {
			createNote(t, userID, "a")
			if _, err := s.memCmds.PatchSettings(ctx, metaFor(userID), "a", json.RawMessage(`{"stack_state":"maintenance"}`)); err != nil {
				t.Fatal(err)
			}
			return note("while in maintenance")
		}, http.StatusConflict, "stack_in_maintenance", 0, ""},
		{"a memory written while storage is full", func(t *testing.T, userID string) write {
			createNote(t, userID, "a")
			full := domain.Errorf(domain.KindStorageFull, "the server's storage is full (test)")
			full.Err = domain.ErrStorageFull
			log.arm(memory.AgentStream(userID, "a"), 0, full)
			t.Cleanup(func() { log.arm("", 0, nil) })
			return note("no room")
		}, http.StatusInsufficientStorage, "storage_full", 0, ""},
		{"a null tag", func(*testing.T, string) write {
			return note("tagged", "tags", []any{nil})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a null content", func(*testing.T, string) write {
			return created(map[string]any{"type": "note", "content": nil})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a null derived_from item", func(*testing.T, string) write {
			return note("derived", "derived_from", []any{nil})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a tag of 200 characters", func(*testing.T, string) write {
			return note("tagged", "tags", []string{strings.Repeat("t", 200)})
		}, http.StatusBadRequest, "invalid_request", 0, ""},
		{"a change of a forgotten memory's text past the text quota", func(t *testing.T, userID string) write {
			id := createNote(t, userID, "a")
			if _, err := s.memCmds.Forget(ctx, metaFor(userID), id, nil); err != nil {
				t.Fatal(err)
			}
			grown := map[string]any{"content": strings.Repeat("g", 3_500)}
			return write{"PATCH", "/v1/memories/" + id, map[string]any{"content": grown},
				[]commands.SyncEvent{syncEvent("MemoryPatched", map[string]any{"memory_id": id, "content": grown, "updated_at": time.Now().UTC()})}}
		}, http.StatusForbidden, memory.CodeQuotaTextBytes, 0, ""},
		{"a change of a purged memory", func(t *testing.T, userID string) write {
			id := createNote(t, userID, "a")
			if err := s.memCmds.Purge(ctx, metaFor(userID), id, nil); err != nil {
				t.Fatal(err)
			}
			return write{"PATCH", "/v1/memories/" + id, map[string]any{"content": map[string]any{"content": "again"}},
				[]commands.SyncEvent{syncEvent("MemoryPatched", map[string]any{"memory_id": id, "content": map[string]any{"content": "again"},
					"updated_at": time.Now().UTC()})}}
		}, http.StatusNotFound, "not_found", http.StatusOK, ""},
		{"a forget of a purged memory", func(t *testing.T, userID string) write {
			id := createNote(t, userID, "a")
			if err := s.memCmds.Purge(ctx, metaFor(userID), id, nil); err != nil {
				t.Fatal(err)
			}
			return write{"DELETE", "/v1/memories/" + id, nil,
				[]commands.SyncEvent{syncEvent("MemoryForgotten", map[string]any{"memory_id": id, "forgotten_at": time.Now().UTC()})}}
		}, http.StatusNotFound, "not_found", http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			users++
			userID, key := s.user(t, fmt.Sprintf("write-rules-%d@example.com", users))
			w := tc.write(t, userID)
			for _, route := range []struct {
				name   string
				send   func() response
				status int
				code   string
			}{
				{"direct", func() response { return s.request(t, w.method, w.path, key, w.body) }, tc.status, tc.code},
				{"push", func() response { return s.push(t, key, "a", w.push...) }, cmpOr(tc.pushStatus, tc.status), cmpOr(tc.pushCode, tc.code)},
			} {
				before := s.streamLength(t, userID, "a")
				r := route.send()
				if route.status == http.StatusOK {
					expect(t, r, http.StatusOK)
				} else if r.status != route.status || r.errorCode() != route.code {
					t.Errorf("%s: %d %s, want %d %s: %s", route.name, r.status, r.errorCode(), route.status, route.code, r.raw)
				}
				if after := s.streamLength(t, userID, "a"); after != before {
					t.Errorf("%s: the refused write appended %d events", route.name, after-before)
				}
			}
		})
	}
}

// cmpOr is v, or else when v is its zero value.
func cmpOr[T comparable](v, orElse T) T {
	var zero T
	if v == zero {
		return orElse
	}
	return v
}
