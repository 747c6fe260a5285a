package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
)

// Syncer moves an agent's events between machines; commands.Sync
// implements it. Both act on the caller's own agent.
type Syncer interface {
	Pull(ctx context.Context, userID, agentID string, after uint64, limit int) (commands.SyncPage, error)
	Push(ctx context.Context, meta domain.Metadata, agentID string, events []commands.SyncEvent) (commands.SyncPushResult, error)
}

// syncRoutes mounts GET /sync/events (pull) and POST /sync/events (push).
func (s *Server) syncRoutes(r chi.Router) {
	if s.cfg.Sync == nil {
		return
	}
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		r.Get("/sync/events", s.syncPull)
		r.Post("/sync/events", s.syncPush)
	})
}

// syncPull serves GET /sync/events?agent_id=&after=&limit=: the agent's
// events after the cursor `after` (a count of the stream's events).
func (s *Server) syncPull(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	var after uint64
	if v := params.Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.fail(w, r, domain.Invalid("after", "after must be a non-negative integer, got %q", v))
			return
		}
		after = n
	}
	limit := 0
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, domain.Invalid("limit", "limit must be an integer from 1 to %d, got %q", commands.MaxSyncBatch, v))
			return
		}
		limit = n
	}
	page, err := s.cfg.Sync.Pull(r.Context(), actor(r.Context()).UserID, params.Get("agent_id"), after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, page)
}

// syncPush serves POST /sync/events {agent_id, events: [{id, type, time, payload}]}.
func (s *Server) syncPush(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AgentID string               `json:"agent_id"`
		Events  []commands.SyncEvent `json:"events"`
	}
	if err := decodeJSON(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Sync.Push(r.Context(), meta(r), req.AgentID, req.Events)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, res)
}
