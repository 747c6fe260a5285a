package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Memories is the agent and memory write surface the API needs;
// commands.Memories implements it. Writes act for meta's user; the reads
// are Queries'.
type Memories interface {
	Create(ctx context.Context, meta domain.Metadata, agentID string, in commands.MemoryInput) (commands.CreatedMemory, error)
	CreateBatch(ctx context.Context, meta domain.Metadata, agentID string, in []commands.MemoryInput) ([]commands.CreatedMemory, error)
	Patch(ctx context.Context, meta domain.Metadata, id string, p commands.MemoryPatch) (memory.View, error)
	Forget(ctx context.Context, meta domain.Metadata, id string, ifMatch commands.IfMatch) (memory.View, error)
	Purge(ctx context.Context, meta domain.Metadata, id string, ifMatch commands.IfMatch) error
	DeleteAgent(ctx context.Context, meta domain.Metadata, agentID string) error
}

// memoryRoutes mounts /memories and /agents; every route needs a bearer
// credential and sees only its user's agents and memories.
func (s *Server) memoryRoutes(r chi.Router) {
	if s.cfg.Memories == nil {
		return
	}
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		r.Post("/memories", s.createMemory)
		r.Post("/memories/batch", s.createMemoryBatch)
		r.Get("/memories", s.listMemories)
		r.Get("/memories/{id}", s.getMemory)
		r.Patch("/memories/{id}", s.patchMemory)
		r.Delete("/memories/{id}", s.deleteMemory)
		r.Get("/agents", s.listAgents)
		r.Delete("/agents/{agent_id}", s.deleteAgent)
	})
}

// memoryItemJSON is one memory of a create request.
type memoryItemJSON struct {
	Type        string          `json:"type"`
	Content     json.RawMessage `json:"content"`
	Tags        []string        `json:"tags"`
	CreatedAt   *string         `json:"created_at"`
	DerivedFrom []string        `json:"derived_from"`
}

func (m memoryItemJSON) input() commands.MemoryInput {
	in := commands.MemoryInput{Type: m.Type, Content: m.Content, Tags: m.Tags, DerivedFrom: m.DerivedFrom}
	if m.CreatedAt != nil {
		in.CreatedAt = *m.CreatedAt
	}
	return in
}

// createdJSON is the response entry of one created memory.
type createdJSON struct {
	Type      memory.Type           `json:"type"`
	ID        string                `json:"id"`
	CreatedAt time.Time             `json:"created_at"`
	Embedding memory.EmbeddingState `json:"embedding"`
}

func toCreatedJSON(c commands.CreatedMemory) createdJSON {
	return createdJSON{Type: c.Type, ID: c.ID, CreatedAt: c.CreatedAt.UTC(), Embedding: c.Embedding}
}

func (s *Server) createMemory(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AgentID string `json:"agent_id"`
		memoryItemJSON
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, end := memorySpan(r.Context(), opCreateMemory, "")
	created, err := s.cfg.Memories.Create(ctx, meta(r), req.AgentID, req.input())
	end(err, 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, toCreatedJSON(created))
}

func (s *Server) createMemoryBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AgentID  string            `json:"agent_id"`
		Memories []json.RawMessage `json:"memories"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := commands.CheckBatchSize(len(req.Memories)); err != nil {
		s.fail(w, r, err)
		return
	}
	// Items are decoded one by one so an error can name its item.
	inputs := make([]commands.MemoryInput, len(req.Memories))
	for i, raw := range req.Memories {
		var item memoryItemJSON
		if err := decodeStrictJSON(raw, &item); err != nil {
			s.fail(w, r, commands.BatchItemError(i, err))
			return
		}
		inputs[i] = item.input()
	}
	created, err := s.cfg.Memories.CreateBatch(r.Context(), meta(r), req.AgentID, inputs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]createdJSON, len(created))
	for i, c := range created {
		out[i] = toCreatedJSON(c)
	}
	writeData(w, http.StatusCreated, map[string]any{"memories": out})
}

// decodeStrictJSON decodes one JSON object held in raw like decodeJSON
// decodes a body: no unknown fields, errors naming the field.
func decodeStrictJSON(raw json.RawMessage, v any) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return domain.Errorf(domain.KindInvalid, "each memory must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return domain.Errorf(domain.KindInvalid, "each memory must be one JSON object")
	}
	return nil
}

// getMemory answers with the memory and its version as the ETag, which
// PATCH and DELETE take in If-Match.
func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Queries.Get(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("ETag", v.ETag())
	if noneMatch(r.Header.Values("If-None-Match"), v.ETag()) {
		w.WriteHeader(http.StatusNotModified) // the client's copy is current
		return
	}
	writeData(w, http.StatusOK, v)
}

// noneMatch reports whether an If-None-Match header names etag, or is "*"
// (RFC 9110 §13.1.2: weak comparison, so W/"3" names "3" too).
func noneMatch(values []string, etag string) bool {
	for _, v := range values {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// ifMatch reads the If-Match header (RFC 9110 §13.1.1): absent or "*"
// (the memory exists, which every route checks anyway) is no condition;
// otherwise a comma-separated list of entity tags. Weak tags (W/"...")
// never match, as If-Match compares strongly.
func ifMatch(r *http.Request) (commands.IfMatch, error) {
	values := r.Header.Values("If-Match")
	if len(values) == 0 {
		return nil, nil
	}
	tags := commands.IfMatch{}
	for _, v := range values {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimSpace(tag)
			switch {
			case tag == "*":
				return nil, nil
			case strings.HasPrefix(tag, "W/") && isQuotedTag(tag[2:]):
				// a weak tag matches nothing; keep checking the syntax
			case isQuotedTag(tag):
				tags = append(tags, tag)
			default:
				return nil, domain.Invalid("If-Match", `If-Match must be "*" or a list of entity tags such as "3" (quotes included), got %q`, v)
			}
		}
	}
	return tags, nil
}

func isQuotedTag(s string) bool {
	return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`)
}

// listMemories serves GET /memories?agent_id=&type=&limit=&cursor=&include_forgotten=&include_weak=.
// type takes plural or singular names, repeated or comma-separated.
func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.cfg.Queries.List(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"memories": page.Memories, "next_cursor": cursorJSON(page.NextCursor)})
}

func listQuery(r *http.Request) (memory.ListQuery, error) {
	params := r.URL.Query()
	q := memory.ListQuery{UserID: actor(r.Context()).UserID, AgentID: params.Get("agent_id"), Cursor: params.Get("cursor")}
	var names []string
	for _, v := range params["type"] {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	var err error
	if q.Types, err = memory.ParseTypeFilter("type", names); err != nil {
		return q, err
	}
	if q.Limit, err = limitParam(params.Get("limit")); err != nil {
		return q, err
	}
	if q.IncludeForgotten, err = boolParam(params.Get("include_forgotten"), "include_forgotten"); err != nil {
		return q, err
	}
	if q.IncludeWeak, err = boolParam(params.Get("include_weak"), "include_weak"); err != nil {
		return q, err
	}
	return q, nil
}

// boolParam reads an optional boolean query parameter (absent is false).
func boolParam(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, domain.Invalid(name, "%s must be true or false, got %q", name, v)
	}
	return b, nil
}

// patchMemory changes a memory, conditionally when If-Match is sent, and
// answers with the memory and its new ETag.
func (s *Server) patchMemory(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content json.RawMessage `json:"content"`
		Tags    *[]string       `json:"tags"`
	}
	cond, err := ifMatch(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if bytes.Equal(bytes.TrimSpace(req.Content), []byte("null")) {
		req.Content = nil // null is absent, as for every optional field
	}
	id := chi.URLParam(r, "id")
	ctx, end := memorySpan(r.Context(), opUpdateMemory, id)
	v, err := s.cfg.Memories.Patch(ctx, meta(r), id, commands.MemoryPatch{Content: req.Content, Tags: req.Tags, IfMatch: cond})
	end(err, 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("ETag", v.ETag())
	writeData(w, http.StatusOK, v)
}

// deleteMemory forgets a memory, or with ?purge=true removes it from every
// projection; both honour If-Match. A forget answers with the new ETag.
func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	purge, err := boolParam(r.URL.Query().Get("purge"), "purge")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cond, err := ifMatch(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, end := memorySpan(r.Context(), opDeleteMemory, id)
	if purge {
		err := s.cfg.Memories.Purge(ctx, meta(r), id, cond)
		end(err, 1)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeData(w, http.StatusOK, map[string]any{"id": id, "purged": true})
		return
	}
	v, err := s.cfg.Memories.Forget(ctx, meta(r), id, cond)
	end(err, 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("ETag", v.ETag())
	writeData(w, http.StatusOK, map[string]any{"id": v.ID, "forgotten": v.Forgotten, "forgotten_at": v.ForgottenAt})
}

// listAgents serves GET /agents?limit=&cursor=, paginated like
// GET /memories: agents in agent_id order, next_cursor null on the last page.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	q := memory.AgentListQuery{UserID: actor(r.Context()).UserID, Cursor: params.Get("cursor")}
	var err error
	if q.Limit, err = limitParam(params.Get("limit")); err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.cfg.Queries.Agents(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"agents": page.Agents, "next_cursor": cursorJSON(page.NextCursor)})
}

// limitParam reads an optional page size (absent is 0: the default).
func limitParam(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > memory.MaxListLimit {
		return 0, domain.Invalid("limit", "limit must be an integer from 1 to %d, got %q", memory.MaxListLimit, v).WithDetail("limit", memory.MaxListLimit)
	}
	return n, nil
}

// cursorJSON is a listing's next_cursor: null on the last page.
func cursorJSON(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) {
	agentID := chi.URLParam(r, "agent_id")
	if err := s.cfg.Memories.DeleteAgent(r.Context(), meta(r), agentID); err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"agent_id": agentID, "deleted": true})
}
