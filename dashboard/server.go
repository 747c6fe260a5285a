package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/api/httpstatus"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/anxiety"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/projections/query"
)

// Limits of the list endpoints (docs/dashboard.md#dashboard-api). Raw entries default
// to more than the other lists: the Raw Entries tab shows them by the
// page, its selector going from 50 to 500.
const (
	DefaultRawLimit  = 200
	DefaultListLimit = 100
	MaxLimit         = 500
)

// Queries is the read side the dashboard shows; query.Service implements
// it. The dashboard only reads: it holds nothing of the write side.
type Queries interface {
	Get(ctx context.Context, userID, id string) (memory.View, error)
	List(ctx context.Context, q memory.ListQuery) (memory.Page, error)
	Settings(ctx context.Context, userID, agentID string) (agentsettings.View, error)
	Stats(ctx context.Context, userID, agentID string) (memory.Stats, error)
	Audit(ctx context.Context, q audit.Query) (audit.Page, error)
	Provenance(ctx context.Context, userID, id, direction string, depth int) (query.ProvenanceTree, error)
	Processing(ctx context.Context, userID, agentID string) (query.ProcessingView, error)
	Suggestions(ctx context.Context, userID, agentID string, status processing.Status, limit int) ([]processing.Suggestion, error)
	Anxiety(ctx context.Context, userID, agentID string) (anxiety.Report, error)
	RawEntries(ctx context.Context, userID, agentID string, q query.RawQuery) (query.RawPage, error)
	RawEntry(ctx context.Context, userID, agentID, id string) (query.RawEntryView, error)
}

// Config is what a dashboard server shows: the stack (the agent AgentID of
// user UserID) and the queries over it.
type Config struct {
	UserID  string
	AgentID string
	Queries Queries
	Logger  *slog.Logger // nil discards
}

// Server answers the dashboard's JSON API and serves its UI.
type Server struct {
	cfg    Config
	logger *slog.Logger
}

// New builds the server.
func New(cfg Config) *Server {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, logger: logger}
}

// memoryLists are the memory list endpoints and the type each lists.
var memoryLists = map[string]memory.Type{
	"episodes":      memory.Episode,
	"beliefs":       memory.Belief,
	"notes":         memory.Note,
	"values":        memory.Value,
	"goals":         memory.Goal,
	"relationships": memory.Relationship,
	"drives":        memory.Drive,
}

// Handler is the whole dashboard behind Guard.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { writeError(w, http.StatusNotFound) })
	r.Use(headAsGet)
	r.Route("/api", func(r chi.Router) {
		r.Get("/stats", view(s, s.cfg.Queries.Stats))
		r.Get("/anxiety", view(s, s.cfg.Queries.Anxiety))
		r.Get("/raw", s.rawList)
		r.Get("/raw/{id}", s.rawEntry)
		for path, typ := range memoryLists {
			r.Get("/"+path, s.memoryList(typ))
		}
		r.Get("/suggestions", s.suggestions)
		r.Get("/audit", s.audit)
		r.Get("/processing", view(s, s.cfg.Queries.Processing))
		r.Get("/provenance/{type}/{id}", s.provenance)
		r.Get("/settings", view(s, s.cfg.Queries.Settings))
	})
	r.Handle("/*", genericNotFound(uiHandler()))
	return Guard(r, s.logger)
}

// headAsGet routes a HEAD request to the GET route of its path (net/http
// sends no body with a HEAD answer): the dashboard registers GET routes
// only. It is chi's middleware.GetHead for a router without HEAD routes,
// written here so that the binary does not link chi's middleware package,
// whose initialisation (the host name, random bytes, a logger) every
// engram process paid at its start.
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			chi.RouteContext(r.Context()).RouteMethod = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// genericNotFound makes the UI's "not found" the dashboard's own, so every
// 404 has one shape.
func genericNotFound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&notFoundWriter{ResponseWriter: w}, r)
	})
}

// notFoundWriter replaces a 404 answer by writeError's and drops the
// original body.
type notFoundWriter struct {
	http.ResponseWriter
	notFound bool
}

func (w *notFoundWriter) WriteHeader(status int) {
	if status == http.StatusNotFound {
		w.notFound = true
		w.Header().Del("Content-Type")
		writeError(w.ResponseWriter, status)
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *notFoundWriter) Write(b []byte) (int, error) {
	if w.notFound {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// fail answers err: a domain error with its own status and message, any
// other error as a generic 500 whose detail goes only to the log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var de *domain.Error
	if errors.As(err, &de) && de.Kind != domain.KindInternal {
		writeFailure(w, httpstatus.Of(de.Kind), errorBody{Code: de.PublicCode(), Message: de.Message, Details: de.Details})
		return
	}
	s.logger.ErrorContext(r.Context(), "dashboard request failed", "path", r.URL.Path, "error", err)
	writeError(w, http.StatusInternalServerError)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, data any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, data)
}

// queryParams reads the request's query parameters, refusing any it does not
// know so that a typo surfaces instead of being ignored.
func queryParams(r *http.Request, known ...string) (url.Values, error) {
	q := r.URL.Query()
	for name := range q {
		if !contains(known, name) {
			return nil, domain.Invalid(name, "unknown query parameter %q", name)
		}
	}
	return q, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// listQuery reads a list endpoint's query: ?limit= (1 to MaxLimit;
// absent: def) and the other parameters it knows.
func listQuery(r *http.Request, def int, known ...string) (url.Values, int, error) {
	q, err := queryParams(r, append([]string{"limit"}, known...)...)
	if err != nil {
		return nil, 0, err
	}
	v := q.Get("limit")
	if v == "" {
		return q, def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return nil, 0, domain.Invalid("limit", "limit must be an integer from 1 to %d, got %q", MaxLimit, v).WithDetail("limit", MaxLimit)
	}
	return q, n, nil
}

// boolParam reads an optional true/false parameter; absent is nil.
func boolParam(q url.Values, name string) (*bool, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, domain.Invalid(name, "%s must be true or false, got %q", name, v)
	}
	return &b, nil
}

// next is a page's continuation in JSON: null on the last page.
func next(cursor string) *string {
	if cursor == "" {
		return nil
	}
	return &cursor
}

// view serves an endpoint without query parameters: what get returns for
// the stack's agent.
func view[T any](s *Server, get func(ctx context.Context, userID, agentID string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := queryParams(r); err != nil {
			s.fail(w, r, err)
			return
		}
		v, err := get(r.Context(), s.cfg.UserID, s.cfg.AgentID)
		s.answer(w, r, v, err)
	}
}

// rawList serves /api/raw?limit=&processed=&cursor=.
func (s *Server) rawList(w http.ResponseWriter, r *http.Request) {
	q, limit, err := listQuery(r, DefaultRawLimit, "processed", "cursor")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	processed, err := boolParam(q, "processed")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.cfg.Queries.RawEntries(r.Context(), s.cfg.UserID, s.cfg.AgentID, query.RawQuery{
		Processed: processed, Limit: limit, Cursor: q.Get("cursor"), IncludeForgotten: true, IncludeWeak: true,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, map[string]any{"raw_entries": page.Entries, "next_cursor": next(page.NextCursor)})
}

// rawEntry serves /api/raw/{id}: the entry, its processing state and the
// memories derived from it.
func (s *Server) rawEntry(w http.ResponseWriter, r *http.Request) {
	if _, err := queryParams(r); err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.cfg.Queries.RawEntry(r.Context(), s.cfg.UserID, s.cfg.AgentID, chi.URLParam(r, "id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tree, err := s.cfg.Queries.Provenance(r.Context(), s.cfg.UserID, e.ID, query.DirectionDown, 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	derived := tree.Down.Nodes
	if derived == nil {
		derived = []*memory.ProvenanceNode{}
	}
	writeData(w, struct {
		query.RawEntryView
		Derived []*memory.ProvenanceNode `json:"derived"`
	}{e, derived})
}

// memoryList serves one memory type's list: ?limit=&cursor=, forgotten
// and weak memories included, each with its strength and tier.
func (s *Server) memoryList(typ memory.Type) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, limit, err := listQuery(r, DefaultListLimit, "cursor")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		page, err := s.cfg.Queries.List(r.Context(), memory.ListQuery{
			UserID: s.cfg.UserID, AgentID: s.cfg.AgentID, Types: []memory.Type{typ},
			IncludeForgotten: true, IncludeWeak: true, Limit: limit, Cursor: q.Get("cursor"),
		})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		list := page.Memories
		if list == nil {
			list = []memory.View{}
		}
		writeData(w, map[string]any{"memories": list, "next_cursor": next(page.NextCursor)})
	}
}

// suggestions serves /api/suggestions?limit=&status=.
func (s *Server) suggestions(w http.ResponseWriter, r *http.Request) {
	q, limit, err := listQuery(r, DefaultListLimit, "status")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var status processing.Status
	if v := q.Get("status"); v != "" {
		if status, err = processing.ParseStatus("status", v); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	list, err := s.cfg.Queries.Suggestions(r.Context(), s.cfg.UserID, s.cfg.AgentID, status, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		list = []processing.Suggestion{}
	}
	writeData(w, map[string]any{"suggestions": list})
}

// audit serves /api/audit?limit=&before=.
func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	q, limit, err := listQuery(r, audit.DefaultLimit, "before")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.cfg.Queries.Audit(r.Context(), audit.Query{UserID: s.cfg.UserID, AgentID: s.cfg.AgentID, Before: q.Get("before"), Limit: limit})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entries := page.Entries
	if entries == nil {
		entries = []audit.Entry{}
	}
	writeData(w, map[string]any{"entries": entries, "next_before": next(page.NextBefore)})
}

// provenance serves /api/provenance/{type}/{id}: the memory's tree both
// ways, what it was derived from (up) and what was derived from it (down).
// type is the memory type in any spelling memory.ParseType accepts
// (singular, plural, short: "raw"); a memory of another type is not found.
func (s *Server) provenance(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "depth")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	typ, ok := memory.ParseType(chi.URLParam(r, "type"))
	if !ok {
		s.fail(w, r, domain.Invalid("type", "unknown memory type %q", chi.URLParam(r, "type")))
		return
	}
	depth := 0
	if v := q.Get("depth"); v != "" {
		if depth, err = strconv.Atoi(v); err != nil || depth < 1 {
			s.fail(w, r, domain.Invalid("depth", "depth must be a positive integer, got %q", v))
			return
		}
	}
	id := chi.URLParam(r, "id")
	if err := s.ownMemory(r.Context(), typ, id); err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.cfg.Queries.Provenance(r.Context(), s.cfg.UserID, id, query.DirectionBoth, depth)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, map[string]any{"id": t.Memory.ID, "type": t.Memory.Type, "depth": t.Depth, "up": t.Up, "down": t.Down})
}

// ownMemory checks that id is a memory of type typ in this stack: a
// memory of another stack or type is not found, like a missing one.
func (s *Server) ownMemory(ctx context.Context, typ memory.Type, id string) error {
	v, err := s.cfg.Queries.Get(ctx, s.cfg.UserID, id)
	if err != nil {
		return err
	}
	if v.AgentID != s.cfg.AgentID || v.Type != typ {
		return domain.NotFound("memory")
	}
	return nil
}

// writeData sends the success envelope around data.
func writeData(w http.ResponseWriter, data any) {
	writeJSON(w, http.StatusOK, struct {
		Success bool `json:"success"`
		Data    any  `json:"data"`
	}{true, data})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}
