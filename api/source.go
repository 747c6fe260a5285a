package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/engram-memory/engram/domain"
)

// SourceHeader lets a client that relays another interface over the API
// declare it, so that the events of its writes record that interface and
// not api: `engram mcp --cloud` sends "Engram-Source: mcp".
const SourceHeader = "Engram-Source"

// ClaimableSources are the values a client may declare in SourceHeader.
// The others are the server's to set: cli is a local stack's command
// line, sync and import are set by their routes, system by the workers.
var ClaimableSources = []domain.Source{domain.SourceAPI, domain.SourceMCP}

type sourceKey struct{}

// withSource takes the interface a request declares (SourceHeader; api
// when absent) and refuses one a client may not claim.
func (s *Server) withSource(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		declared := r.Header.Get(SourceHeader)
		if declared == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !slices.Contains(ClaimableSources, domain.Source(declared)) {
			s.fail(w, r, domain.Invalid(SourceHeader, "%s must be api or mcp, got %q", SourceHeader, declared))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sourceKey{}, domain.Source(declared))))
	})
}

// source is the interface the request came in through.
func source(ctx context.Context) domain.Source {
	if declared, ok := ctx.Value(sourceKey{}).(domain.Source); ok {
		return declared
	}
	return domain.SourceAPI
}
