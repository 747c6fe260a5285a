package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/projections/query"
)

// Pipeline is the processing and suggestion write surface the API needs;
// commands.Pipeline implements it. The reads (processing view,
// suggestions, anxiety, raw entries) are Queries'.
type Pipeline interface {
	Configure(ctx context.Context, meta domain.Metadata, agentID string, patch processing.ConfigPatch) error
	Process(ctx context.Context, meta domain.Metadata, agentID string, req commands.ProcessRequest) ([]processing.Pass, error)
	Exhaust(ctx context.Context, meta domain.Metadata, agentID string, req commands.ExhaustRequest) (commands.ExhaustResult, error)
	Accept(ctx context.Context, meta domain.Metadata, id string, o commands.AcceptOverrides) (commands.Accepted, error)
	Resolve(ctx context.Context, meta domain.Metadata, id string, to processing.Status, reason string) (processing.Suggestion, error)
}

// pipelineRoutes mounts the processing pipeline, suggestions and anxiety
// of an agent; like every agent route, other users' agents and
// suggestions are not found.
func (s *Server) pipelineRoutes(r chi.Router) {
	if s.cfg.Pipeline == nil {
		return
	}
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		r.Post("/agents/{agent_id}/process", s.process)
		r.Post("/agents/{agent_id}/process/exhaust", s.exhaust)
		r.Get("/agents/{agent_id}/processing", s.getProcessing)
		r.Patch("/agents/{agent_id}/processing", s.patchProcessing)
		r.Get("/agents/{agent_id}/suggestions", s.listSuggestions)
		r.Get("/agents/{agent_id}/anxiety", s.getAnxiety)
		r.Get("/agents/{agent_id}/raw", s.listRawEntries)
		r.Get("/suggestions/{id}", s.getSuggestion)
		r.Post("/suggestions/{id}/accept", s.acceptSuggestion)
		r.Post("/suggestions/{id}/reject", s.resolveSuggestion(processing.Rejected))
		r.Post("/suggestions/{id}/dismiss", s.resolveSuggestion(processing.Dismissed))
	})
}

// optionalJSON decodes a body when one was sent: these POSTs work with
// no body at all.
func optionalJSON(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decodeJSON(r, v)
}

func (s *Server) process(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Force      bool   `json:"force"`
		Transition string `json:"transition"`
	}
	if err := optionalJSON(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	passes, err := s.cfg.Pipeline.Process(r.Context(), meta(r), chi.URLParam(r, "agent_id"), commands.ProcessRequest{Force: body.Force, Transition: body.Transition})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"passes": passes})
}

// exhaust serves POST /agents/{id}/process/exhaust with an optional
// {max_cycles, auto_promote} body.
func (s *Server) exhaust(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MaxCycles   *int  `json:"max_cycles"`
		AutoPromote *bool `json:"auto_promote"`
	}
	if err := optionalJSON(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	req := commands.ExhaustRequest{AutoPromote: body.AutoPromote}
	if body.MaxCycles != nil {
		if *body.MaxCycles == 0 {
			s.fail(w, r, domain.Invalid("max_cycles", "max_cycles must be between 1 and %d, got 0", processing.MaxExhaustCycles).WithDetail("limit", processing.MaxExhaustCycles))
			return
		}
		req.MaxCycles = *body.MaxCycles
	}
	out, err := s.cfg.Pipeline.Exhaust(r.Context(), meta(r), chi.URLParam(r, "agent_id"), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, exhaustAnswer{ExhaustResult: out, Error: s.cycleFailure(r, out.Failure)})
}

// exhaustAnswer is an exhaust run's result with, when a cycle after the
// first failed (convergence_reason cycle_failed), that cycle's error in
// the failure envelope's shape.
type exhaustAnswer struct {
	commands.ExhaustResult
	Error *errorBody `json:"error,omitempty"`
}

// cycleFailure is err as the failure envelope's error object shows it
// (nil for none); an internal error is logged, and the client told only
// that it happened, as writeError does.
func (s *Server) cycleFailure(r *http.Request, err error) *errorBody {
	if err == nil {
		return nil
	}
	body, _ := failureBody(r, s.logger, "exhaust cycle failed", err)
	return &body
}

func (s *Server) getProcessing(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Queries.Processing(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "agent_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) patchProcessing(w http.ResponseWriter, r *http.Request) {
	var patch processing.ConfigPatch
	if err := decodeJSON(r, &patch); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.cfg.Pipeline.Configure(r.Context(), meta(r), chi.URLParam(r, "agent_id"), patch); err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.cfg.Queries.Processing(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "agent_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) listSuggestions(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	var status processing.Status
	if v := params.Get("status"); v != "" {
		st, err := processing.ParseStatus("status", v)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		status = st
	}
	limit := processing.DefaultSuggestionLimit
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > processing.MaxSuggestionLimit {
			s.fail(w, r, domain.Invalid("limit", "limit must be an integer from 1 to %d, got %q", processing.MaxSuggestionLimit, v).WithDetail("limit", processing.MaxSuggestionLimit))
			return
		}
		limit = n
	}
	list, err := s.cfg.Queries.Suggestions(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "agent_id"), status, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		list = []processing.Suggestion{}
	}
	writeData(w, http.StatusOK, map[string]any{"suggestions": list})
}

func (s *Server) getSuggestion(w http.ResponseWriter, r *http.Request) {
	sg, err := s.cfg.Queries.Suggestion(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, sg)
}

func (s *Server) acceptSuggestion(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content json.RawMessage `json:"content"`
		Tags    []string        `json:"tags"`
	}
	if err := optionalJSON(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.cfg.Pipeline.Accept(r.Context(), meta(r), chi.URLParam(r, "id"), commands.AcceptOverrides{Content: body.Content, Tags: body.Tags})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{
		"suggestion": out.Suggestion,
		"memory":     map[string]any{"type": out.Memory.Type, "id": out.Memory.ID, "created_at": out.Memory.CreatedAt, "embedding": out.Memory.Embedding},
	})
}

func (s *Server) resolveSuggestion(to processing.Status) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Reason string `json:"reason"`
		}
		if err := optionalJSON(r, &body); err != nil {
			s.fail(w, r, err)
			return
		}
		sg, err := s.cfg.Pipeline.Resolve(r.Context(), meta(r), chi.URLParam(r, "id"), to, body.Reason)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeData(w, http.StatusOK, sg)
	}
}

func (s *Server) getAnxiety(w http.ResponseWriter, r *http.Request) {
	rep, err := s.cfg.Queries.Anxiety(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "agent_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, rep)
}

func (s *Server) listRawEntries(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	q := query.RawQuery{Limit: query.DefaultRawLimit, IncludeWeak: true}
	if v := params.Get("processed"); v != "" {
		b, err := boolParam(v, "processed")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		q.Processed = &b
	}
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > query.MaxRawLimit {
			s.fail(w, r, domain.Invalid("limit", "limit must be an integer from 1 to %d, got %q", query.MaxRawLimit, v).WithDetail("limit", query.MaxRawLimit))
			return
		}
		q.Limit = n
	}
	page, err := s.cfg.Queries.RawEntries(r.Context(), actor(r.Context()).UserID, chi.URLParam(r, "agent_id"), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"raw_entries": page.Entries})
}
