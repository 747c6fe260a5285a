package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
)

// Cognition is the stack-cognition write surface: settings and strength
// actions; commands.Memories implements it. Its reads are Queries'.
type Cognition interface {
	PatchSettings(ctx context.Context, meta domain.Metadata, agentID string, patch json.RawMessage) (agentsettings.View, error)
	Recover(ctx context.Context, meta domain.Metadata, id string, ifMatch commands.IfMatch) (memory.View, error)
	Protect(ctx context.Context, meta domain.Metadata, id string, ifMatch commands.IfMatch) (memory.View, error)
	Unprotect(ctx context.Context, meta domain.Metadata, id string, ifMatch commands.IfMatch) (memory.View, error)
	Weaken(ctx context.Context, meta domain.Metadata, id string, c commands.StrengthChange, ifMatch commands.IfMatch) (memory.View, error)
	Verify(ctx context.Context, meta domain.Metadata, id string, c commands.StrengthChange, ifMatch commands.IfMatch) (memory.View, error)
}

// cognitionRoutes mounts the settings, strength-action, provenance, audit
// and stats routes; all need a bearer credential and see only the user's
// agents and memories (another user's are 404).
func (s *Server) cognitionRoutes(r chi.Router) {
	if s.cfg.Cognition == nil {
		return
	}
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		r.Get("/agents/{agent_id}/settings", s.getSettings)
		r.Patch("/agents/{agent_id}/settings", s.patchSettings)
		r.Get("/agents/{agent_id}/audit", s.agentAudit)
		r.Get("/agents/{agent_id}/stats", s.agentStats)
		r.Get("/audit", s.accountAudit)
		r.Get("/memories/{id}/provenance", s.provenance)
		r.Post("/memories/{id}/recover", s.memoryAction(s.cfg.Cognition.Recover))
		r.Post("/memories/{id}/protect", s.memoryAction(s.cfg.Cognition.Protect))
		r.Post("/memories/{id}/unprotect", s.memoryAction(s.cfg.Cognition.Unprotect))
		r.Post("/memories/{id}/weaken", s.strengthChange(s.cfg.Cognition.Weaken))
		r.Post("/memories/{id}/verify", s.strengthChange(s.cfg.Cognition.Verify))
	})
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Queries.Settings(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "agent_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) patchSettings(w http.ResponseWriter, r *http.Request) {
	var patch json.RawMessage
	if err := decodeJSON(r, &patch); err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.cfg.Cognition.PatchSettings(r.Context(), meta(r), chi.URLParam(r, "agent_id"), patch)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

// memoryAction serves a body-less strength action (recover, protect,
// unprotect); it honours If-Match and answers with the memory.
func (s *Server) memoryAction(act func(context.Context, domain.Metadata, string, commands.IfMatch) (memory.View, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cond, err := ifMatch(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := noBody(r); err != nil {
			s.fail(w, r, err)
			return
		}
		s.answerMemory(w, r)(act(r.Context(), meta(r), chi.URLParam(r, "id"), cond))
	}
}

// strengthChange serves weaken and verify, whose JSON body ({by?,
// reason?}) is optional.
func (s *Server) strengthChange(act func(context.Context, domain.Metadata, string, commands.StrengthChange, commands.IfMatch) (memory.View, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cond, err := ifMatch(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var c commands.StrengthChange
		if hasBody(r) {
			if err := decodeJSON(r, &c); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		s.answerMemory(w, r)(act(r.Context(), meta(r), chi.URLParam(r, "id"), c, cond))
	}
}

func (s *Server) answerMemory(w http.ResponseWriter, r *http.Request) func(memory.View, error) {
	return func(v memory.View, err error) {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("ETag", v.ETag())
		writeData(w, http.StatusOK, v)
	}
}

// hasBody tells whether the request carries a body.
func hasBody(r *http.Request) bool { return r.ContentLength > 0 || r.ContentLength == -1 }

// noBody rejects a body on an action that takes none, so a misplaced
// field surfaces.
func noBody(r *http.Request) error {
	if hasBody(r) {
		return domain.Invalid("", "this action takes no request body")
	}
	return nil
}

// provenance serves GET /memories/{id}/provenance?direction=up|down|both&depth=.
func (s *Server) provenance(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	depth, err := intParam(params.Get("depth"), "depth")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.cfg.Queries.Provenance(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "id"), params.Get("direction"), depth)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"id": t.Memory.ID, "type": t.Memory.Type, "direction": t.Direction, "depth": t.Depth, "up": t.Up, "down": t.Down})
}

// intParam reads an optional integer query parameter (absent is 0: the
// default); the range is checked by the command.
func intParam(v, name string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n == 0 {
		return 0, domain.Invalid(name, "%s must be a positive integer, got %q", name, v)
	}
	return n, nil
}

func (s *Server) agentAudit(w http.ResponseWriter, r *http.Request) {
	agentID := chi.URLParam(r, "agent_id")
	if memory.ValidateAgentID(agentID) != nil {
		s.fail(w, r, domain.NotFound("agent"))
		return
	}
	s.audit(w, r, agentID)
}

func (s *Server) accountAudit(w http.ResponseWriter, r *http.Request) { s.audit(w, r, "") }

// audit serves a page of the audit trail: ?limit= (1-1000, default 100)
// and ?before= (next_before of the previous page).
func (s *Server) audit(w http.ResponseWriter, r *http.Request, agentID string) {
	params := r.URL.Query()
	limit, err := intParam(params.Get("limit"), "limit")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.cfg.Queries.Audit(r.Context(), audit.Query{UserID: actor(r.Context()).UserID, AgentID: agentID, Before: params.Get("before"), Limit: limit})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"entries": page.Entries, "next_before": cursorJSON(page.NextBefore)})
}

func (s *Server) agentStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Queries.Stats(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "agent_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, st)
}
