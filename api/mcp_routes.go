package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/domain"
)

// MCPPath is where the MCP endpoint is served, beside /v1.
const MCPPath = "/mcp"

// ProtectedResourcePath is the OAuth protected-resource metadata document
// (RFC 9728) of the MCP endpoint, which the MCP authorization spec has
// clients read to learn how to authenticate.
const ProtectedResourcePath = "/.well-known/oauth-protected-resource"

// mcpRoutes mounts cfg.MCP at /mcp behind the API's authentication — the
// same bearer credentials, per-credential rate limit and cost of a bad
// credential to the client IP — and publishes its protected-resource
// metadata.
func (s *Server) mcpRoutes(r chi.Router) {
	if s.cfg.MCP == nil {
		return
	}
	r.Get(ProtectedResourcePath, s.protectedResource)
	r.Get(ProtectedResourcePath+MCPPath, s.protectedResource)
	// The transport's methods only: any other is the API's 405, whose
	// Allow lists these, as the document does.
	mcp := s.requireAuthFor(s.resourceMetadataChallenge, s.cfg.MCP)
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		r.Method(method, MCPPath, mcp)
	}
}

// publicURL is the server's base URL as clients reach it: Config.PublicURL,
// else the request's own scheme and host.
func (s *Server) publicURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimSuffix(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// protectedResource serves RFC 9728's document: the resource is the MCP
// endpoint, the bearer credential goes in the Authorization header, and
// the credentials are Engram's API keys and session tokens (no OAuth
// authorization server issues them: `engram auth` and the dashboard do).
func (s *Server) protectedResource(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 s.publicURL(r) + MCPPath,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "Engram memory (MCP)",
		"resource_documentation":   "https://github.com/engram-memory/engram/blob/main/docs/mcp.md",
	})
}

// resourceMetadataChallenge is the WWW-Authenticate challenge of /mcp: the
// API's, naming the protected-resource metadata as the MCP spec asks.
func (s *Server) resourceMetadataChallenge(r *http.Request) string {
	return `Bearer realm="engram", resource_metadata="` + s.publicURL(r) + ProtectedResourcePath + MCPPath + `"`
}

// Caller is the authenticated caller of a request that passed the API's
// authentication, and the request's id; ok is false outside one.
func Caller(ctx context.Context) (actor domain.Actor, reqID string, ok bool) {
	actor, ok = ctx.Value(principalKey).(domain.Actor)
	return actor, requestID(ctx), ok
}
