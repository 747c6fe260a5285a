package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
// then applies the per-credential rate limit and waits for the request's
// consistency token.
func (s *Server) requireAuth(next http.Handler) http.Handler {
	return s.requireAuthFor(func(*http.Request) string { return `Bearer realm="engram"` }, next)
}

// requireAuthFor is requireAuth answering a missing or bad credential
// with the WWW-Authenticate challenge challenge returns.
func (s *Server) requireAuthFor(challengeOf func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		actor, err := s.authenticate(w, r)
		if err != nil {
			if domain.ErrorKind(err) == domain.KindUnauthorized {
				challenge := challengeOf(r)
				if errors.Is(err, errBadCredential) {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
			}
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, actor)))
	})
}

// errBadCredential marks an authentication error for a credential that was
// presented but is unknown, revoked or expired.
var errBadCredential = errors.New("bad bearer credential")

// authenticate resolves the request's bearer credential and applies the
// rate limits, for every authenticated route whatever its error shape.
// A credential that fails costs the client IP a token of the limit of
// register, verify and login, so guessing keys is no cheaper than guessing
// them through login; an IP with no token left is refused before its
// credential is looked at, so a refusal says nothing about the credential.
// A valid credential costs no IP token; it is then limited per credential,
// and only then may the request wait for its consistency token.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (domain.Actor, error) {
	scheme, credential, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	credential = strings.TrimSpace(credential)
	if !ok || !strings.EqualFold(scheme, "Bearer") || credential == "" {
		return domain.Actor{}, domain.Errorf(domain.KindUnauthorized, "missing bearer credential: send Authorization: Bearer <api key or session token>")
	}
	ip := clientIP(r)
	if ok, err := s.ipLimits.hasToken(r.Context(), w, ip); err != nil || !ok {
		return domain.Actor{}, cmp.Or(err, rateLimited())
	}
	if err := s.awaitCredentials(r.Context()); err != nil {
		return domain.Actor{}, err
	}
	actor, err := s.cfg.Auth.Authenticate(r.Context(), credential)
	if err != nil {
		if domain.ErrorKind(err) == domain.KindUnauthorized {
			if _, limitErr := s.ipLimits.allow(r.Context(), w, ip); limitErr != nil {
				return domain.Actor{}, limitErr
			}
			err = fmt.Errorf("%w: %w", errBadCredential, err)
		}
		return domain.Actor{}, err
	}
	if ok, err := s.userLimits.allow(r.Context(), w, string(actor.Kind)+":"+actor.ID); err != nil || !ok {
		return domain.Actor{}, cmp.Or(err, rateLimited())
	}
	if err := s.awaitConsistencyToken(r, waitingClient(actor)); err != nil {
		return domain.Actor{}, err
	}
	return actor, nil
}

// waitingClient is the client whose consistency-token waits are bounded
// together: the user, whichever of their credentials a request carries.
func waitingClient(a domain.Actor) string {
	if a.UserID != "" {
		return "user:" + a.UserID
	}
	return string(a.Kind) + ":" + a.ID
}

// limitByIP applies the per-client-IP rate limit of the unauthenticated
// account endpoints, then waits for the request's consistency token.
func (s *Server) limitByIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := clientIP(r)
		if ok, err := s.ipLimits.allow(r.Context(), w, ip); err != nil || !ok {
			s.fail(w, r, cmp.Or(err, rateLimited()))
			return
		}
		if err := s.awaitConsistencyToken(r, "ip:"+ip); err != nil {
			s.fail(w, r, err)
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
	return domain.Metadata{Actor: actor(r.Context()), RequestID: requestID(r.Context()), Source: source(r.Context())}
}

func rateLimited() error {
	return domain.Errorf(domain.KindRateLimited, "rate limit exceeded; retry after the time in Retry-After")
}
