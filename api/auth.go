package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// Authenticator resolves a bearer credential (API key or session token) to
// the actor it stands for. Unknown, revoked or expired credentials yield a
// KindUnauthorized error.
type Authenticator interface {
	Authenticate(ctx context.Context, credential string) (domain.Actor, error)
}

// requireAuth lets a request through only with a valid bearer credential,
// then applies the per-credential rate limit.
func (s *Server) requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, credential, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(credential) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
			s.fail(w, r, domain.Errorf(domain.KindUnauthorized, "missing bearer credential: send Authorization: Bearer <api key or session token>"))
			return
		}
		actor, err := s.cfg.Auth.Authenticate(r.Context(), strings.TrimSpace(credential))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="engram", error="invalid_token"`)
			s.fail(w, r, err)
			return
		}
		if !s.userLimits.allow(w, string(actor.Kind)+":"+actor.ID) {
			s.fail(w, r, rateLimited())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, actor)))
	})
}

// limitByIP applies the per-client-IP rate limit of the unauthenticated
// account endpoints.
func (s *Server) limitByIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.ipLimits.allow(w, clientIP(r)) {
			s.fail(w, r, rateLimited())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// actor is the authenticated caller of the request.
func actor(ctx context.Context) domain.Actor {
	a, _ := ctx.Value(principalKey).(domain.Actor)
	return a
}

// meta is the event metadata of the request.
func meta(r *http.Request) domain.Metadata {
	return domain.Metadata{Actor: actor(r.Context()), RequestID: requestID(r.Context())}
}

func rateLimited() error {
	return domain.Errorf(domain.KindRateLimited, "rate limit exceeded; retry after the time in Retry-After")
}
