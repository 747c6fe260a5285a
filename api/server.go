package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/engram-memory/engram/domain"
)

// Config holds the server's dependencies and limits.
type Config struct {
	Logger       *slog.Logger
	MaxBodyBytes int64
	// BodyReadTimeout bounds the time to receive a request body, and
	// WriteTimeout the time a client takes to receive a response; zero
	// leaves them unbounded. MaxInFlight caps the requests served at
	// once (503 server_busy above it); zero is no cap.
	BodyReadTimeout time.Duration
	WriteTimeout    time.Duration
	MaxInFlight     int
	// UserRateLimit applies per credential, IPRateLimit per client IP on
	// register, verify and login.
	UserRateLimit RateLimit
	IPRateLimit   RateLimit
	// Ready reports whether the server can serve (projections caught up).
	Ready func(ctx context.Context) error
	// StorageFull returns why the server's storage is full (writes are
	// refused meanwhile), nil while it has room; /readyz says which.
	StorageFull func(ctx context.Context) error
	// Backends reports each search index backend's readiness (nil: up),
	// by name; /readyz lists them and is 503 while one is down.
	Backends func(ctx context.Context) map[string]error
	// Projections reports the projections' positions and delivery
	// metrics (any JSON value), shown on /readyz.
	Projections func() any
	// Visibility lets a request wait for a consistency token from another
	// node (see ConsistencyTokenHeader), at most ConsistencyWait
	// (0: DefaultConsistencyWait). Nil: a single node, whose writes are
	// visible before they are answered, so tokens need no wait.
	Visibility      Visibility
	ConsistencyWait time.Duration
	// LogHead returns the last position of the event log this node reads;
	// a consistency token beyond it is refused at once instead of waited
	// for. Nil: tokens are not checked against the log.
	LogHead func(ctx context.Context) (uint64, error)
	// MaxConsistencyWaits bounds the requests of one client (a user, or an
	// IP on the routes without credential) waiting for their consistency
	// tokens at once (0: DefaultMaxConsistencyWaits).
	MaxConsistencyWaits int
	// CredentialsCurrent, when set, returns once this node's credential
	// read model includes every change in the shared log up to its head at
	// the call (several nodes over one log); authentication waits for it,
	// at most ConsistencyWait. Nil: one node, whose own writes are the
	// only ones.
	CredentialsCurrent func(ctx context.Context) error
	// RateBuckets, when set, keeps the rate-limit buckets in a store every
	// node shares; nil keeps them in process.
	RateBuckets RateBuckets
	// Requests, when set, hears of every request (metrics); Tracer, when
	// set, traces every request, continuing a caller's W3C trace context
	// (traceparent). Nil leaves either out.
	Requests RequestObserver
	Tracer   trace.TracerProvider

	// MCP, when set, is served at /mcp behind the API's authentication
	// (see mcpRoutes); PublicURL is the server's base URL as clients reach
	// it, which the MCP protected-resource metadata names (empty: the
	// request's scheme and host).
	MCP       http.Handler
	PublicURL string

	Auth       Authenticator
	Accounts   Accounts
	Memories   Memories
	Embeddings Embeddings
	Search     Searcher
	Sync       Syncer
	Transfer   Transferer
	Pipeline   Pipeline
	Cognition  Cognition
	// Webhooks, when set, mounts /webhooks.
	Webhooks Webhooks
	// Queries answers every read of the routes above.
	Queries Queries
}

// Server serves the HTTP API.
type Server struct {
	cfg        Config
	logger     *slog.Logger
	userLimits *limiterSet
	ipLimits   *limiterSet
	tokenWaits *clientWaits
	// documented is the document's paths with their methods, read at the
	// first 405 (most servers never answer one).
	documented func() []documentedPath
}

// New returns a server; cfg.Logger and cfg.Auth are required.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 10 << 20
	}
	return &Server{
		cfg:        cfg,
		logger:     cfg.Logger,
		userLimits: newLimiterSet(cfg.UserRateLimit, "credential:", cfg.RateBuckets),
		ipLimits:   newLimiterSet(cfg.IPRateLimit, "ip:", cfg.RateBuckets),
		tokenWaits: newClientWaits(cfg.MaxConsistencyWaits),
		documented: sync.OnceValue(func() []documentedPath { return documentedPaths(openAPIDocument) }),
	}
}

// Handler returns the routed HTTP handler.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.withTelemetry, withRequestID, withAccessLog(s.logger), s.withIOBounds, s.limitInFlight, s.withConsistency)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, domain.Errorf(domain.KindNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		// RFC 9110 §15.5.6 wants the path's methods in Allow, and chi hands
		// a custom handler none. The router's own answer is not exact (a
		// mounted group takes every method, /v1/memories/batch is also
		// /v1/memories/{id}): the document's methods of the path are, as
		// TestOpenAPIDocumentsEveryMountedRoute keeps them the mounted ones.
		w.Header().Set("Allow", strings.Join(allowedMethods(s.documented(), req.URL.Path), ", "))
		writeFailure(w, http.StatusMethodNotAllowed, errorBody{
			Code: "method_not_allowed", Message: "method " + req.Method + " is not allowed on " + req.URL.Path, RequestID: requestID(req.Context()),
		})
	})
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeData(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	r.Get("/readyz", s.readyz)
	r.Route("/v1", func(r chi.Router) {
		r.Get("/openapi.json", serveOpenAPI)
		// The embedding routes take Engram-Source on Engram's routes only:
		// OpenAI's answer in OpenAI's shape and append no event.
		s.embeddingRoutes(r)
		r.Group(func(r chi.Router) {
			r.Use(s.withSource)
			s.accountRoutes(r)
			s.memoryRoutes(r)
			s.searchRoutes(r)
			s.syncRoutes(r)
			s.transferRoutes(r)
			s.pipelineRoutes(r)
			s.cognitionRoutes(r)
			s.webhookRoutes(r)
		})
	})
	s.mcpRoutes(r)
	return r
}

// readyz reports readiness with each search index backend and the
// projections' delivery metrics: 503 storage_full while the storage is full
// (reads are served, writes refused with 507), 503 not_ready while the
// projections catch up at start, 503 backend_unavailable while an index
// backend is down (writes wait for their projections, so they would not
// complete).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.StorageFull != nil {
		if full := s.cfg.StorageFull(r.Context()); full != nil {
			details := map[string]any{"storage": map[string]string{"status": "full", "error": full.Error()}}
			if s.cfg.Projections != nil {
				details["projections"] = s.cfg.Projections()
			}
			writeFailure(w, http.StatusServiceUnavailable, errorBody{
				Code:      string(domain.KindStorageFull),
				Message:   "the server's storage is full: writes are refused (507 storage_full) until space is freed; reads are served",
				RequestID: requestID(r.Context()), Details: details,
			})
			return
		}
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(r.Context()); err != nil {
			writeFailure(w, http.StatusServiceUnavailable, errorBody{
				Code: "not_ready", Message: err.Error(), RequestID: requestID(r.Context()),
			})
			return
		}
	}
	backends := map[string]any{}
	var down []string
	if s.cfg.Backends != nil {
		for name, err := range s.cfg.Backends(r.Context()) {
			if err != nil {
				down = append(down, name)
				backends[name] = map[string]string{"status": "unavailable", "error": err.Error()}
				continue
			}
			backends[name] = map[string]string{"status": "ok"}
		}
	}
	body := map[string]any{"status": "ready", "backends": backends}
	if s.cfg.Projections != nil {
		body["projections"] = s.cfg.Projections()
	}
	if len(down) > 0 {
		slices.Sort(down)
		writeFailure(w, http.StatusServiceUnavailable, errorBody{
			Code: "backend_unavailable", Message: "search index backend unavailable: " + strings.Join(down, ", "),
			RequestID: requestID(r.Context()), Details: body,
		})
		return
	}
	writeData(w, http.StatusOK, body)
}

// fail sends err as the failure envelope.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, s.logger, err)
}

// documentedPath is a path of the OpenAPI document with the methods the
// document gives it.
type documentedPath struct {
	segments []string // a "{name}" segment stands for any one segment
	methods  []string // upper case, in methodOrder
}

// methodOrder is the order Allow lists methods in.
var methodOrder = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodTrace}

// documentedPaths reads the paths of an OpenAPI document and their
// methods. The document is the embedded one, which the tests parse and
// validate: one that does not parse is a build that never passed them.
func documentedPaths(document []byte) []documentedPath {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		panic(fmt.Sprintf("api: the embedded OpenAPI document does not parse: %v", err))
	}
	paths := make([]documentedPath, 0, len(doc.Paths))
	for path, item := range doc.Paths {
		p := documentedPath{segments: strings.Split(path, "/")}
		for _, m := range methodOrder {
			if _, ok := item[strings.ToLower(m)]; ok {
				p.methods = append(p.methods, m)
			}
		}
		paths = append(paths, p)
	}
	return paths
}

// allowedMethods lists the methods the document gives the path that
// path is, as the router chooses it: where several match, the one with a
// literal segment where the others have a parameter, first from the left
// (/v1/memories/batch, not /v1/memories/{id}).
func allowedMethods(paths []documentedPath, path string) []string {
	segments := strings.Split(path, "/")
	var best *documentedPath
	for i := range paths {
		if matchesSegments(paths[i].segments, segments) && (best == nil || moreLiteral(paths[i].segments, best.segments)) {
			best = &paths[i]
		}
	}
	if best == nil {
		return nil
	}
	return best.methods
}

func isParameter(segment string) bool {
	return strings.HasPrefix(segment, "{") && strings.HasSuffix(segment, "}")
}

func matchesSegments(template, segments []string) bool {
	if len(template) != len(segments) {
		return false
	}
	for i, t := range template {
		if !isParameter(t) && t != segments[i] || isParameter(t) && segments[i] == "" {
			return false
		}
	}
	return true
}

// moreLiteral reports whether template a, of a path b also matches, has a
// literal segment where b has a parameter before the other way round.
func moreLiteral(a, b []string) bool {
	for i := range a {
		if pa, pb := isParameter(a[i]), isParameter(b[i]); pa != pb {
			return pb
		}
	}
	return false
}
