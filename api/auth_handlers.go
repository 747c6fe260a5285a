package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
)

// Accounts is the account and key use-case surface the API needs;
// commands.Accounts implements it.
type Accounts interface {
	Register(ctx context.Context, meta domain.Metadata, email string) (commands.Registered, error)
	Verify(ctx context.Context, meta domain.Metadata, token string) (commands.Verified, error)
	Login(ctx context.Context, meta domain.Metadata, apiKey string) (commands.LoggedIn, error)
	Status(ctx context.Context, actor domain.Actor) (commands.Status, error)
	ListKeys(ctx context.Context, actor domain.Actor) ([]commands.KeyListing, error)
	CreateKey(ctx context.Context, meta domain.Metadata, name string) (commands.CreatedKey, error)
	RevokeKey(ctx context.Context, meta domain.Metadata, keyID string) (commands.RevokedKey, error)
	CycleKey(ctx context.Context, meta domain.Metadata, keyID string) (commands.CycledKey, error)
}

// accountRoutes mounts /auth. Register, verify and login take no
// credential and are limited per client IP; the rest need a bearer
// credential (API key or session token).
func (s *Server) accountRoutes(r chi.Router) {
	if s.cfg.Accounts == nil {
		return
	}
	r.Route("/auth", func(r chi.Router) {
		r.Get("/verify", s.verifyPage)
		r.Group(func(r chi.Router) {
			r.Use(s.limitByIP)
			r.Post("/register", s.register)
			r.Post("/verify", s.verify)
			r.Post("/login", s.login)
		})
		r.Group(func(r chi.Router) {
			r.Use(s.requireAuth)
			r.Get("/status", s.status)
			r.Get("/keys", s.listKeys)
			r.Post("/keys", s.createKey)
			r.Delete("/keys/{key_id}", s.revokeKey)
			r.Post("/keys/{key_id}/cycle", s.cycleKey)
		})
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email *string `json:"email"`
	}
	email, err := decodeRequired(r, &req, "email", func() *string { return req.Email })
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Accounts.Register(r.Context(), meta(r), email)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{
		"user_id": res.UserID,
		"message": "Verification e-mail sent to " + res.Email + ". Send its token to POST /v1/auth/verify before " + rfc3339UTC(res.ExpiresAt) + ".",
	})
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Token *string `json:"token"`
	}
	token, err := decodeRequired(r, &req, "token", func() *string { return req.Token })
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Accounts.Verify(r.Context(), meta(r), token)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	noStore(w)
	writeData(w, http.StatusOK, map[string]any{"user_id": res.UserID, "verified": true, "api_key": res.APIKey})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req struct {
		APIKey *string `json:"api_key"`
	}
	key, err := decodeRequired(r, &req, "api_key", func() *string { return req.APIKey })
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Accounts.Login(r.Context(), meta(r), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	noStore(w)
	writeData(w, http.StatusOK, map[string]any{"user_id": res.UserID, "token": res.Token, "expires_at": rfc3339UTC(res.ExpiresAt)})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Accounts.Status(r.Context(), actor(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{
		"authenticated": true,
		"user_id":       st.UserID,
		"email":         st.Email,
		"created_at":    rfc3339UTC(st.CreatedAt),
		"agents":        st.Agents,
	})
}

// keyListing is an API key as GET /auth/keys shows it: never the secret.
type keyListing struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Prefix     string  `json:"prefix"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	IsActive   bool    `json:"is_active"`
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.cfg.Accounts.ListKeys(r.Context(), actor(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]keyListing, len(keys))
	for i, k := range keys {
		out[i] = keyListing{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: rfc3339UTC(k.CreatedAt), IsActive: k.Active}
		if !k.LastUsedAt.IsZero() {
			used := rfc3339UTC(k.LastUsedAt)
			out[i].LastUsedAt = &used
		}
	}
	writeData(w, http.StatusOK, map[string]any{"keys": out})
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name *string `json:"name"`
	}
	name, err := decodeRequired(r, &req, "name", func() *string { return req.Name })
	if err != nil {
		s.fail(w, r, err)
		return
	}
	k, err := s.cfg.Accounts.CreateKey(r.Context(), meta(r), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	noStore(w)
	writeData(w, http.StatusCreated, map[string]any{"id": k.ID, "name": k.Name, "key": k.Key, "prefix": k.Prefix, "created_at": rfc3339UTC(k.CreatedAt)})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Accounts.RevokeKey(r.Context(), meta(r), chi.URLParam(r, "key_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"id": res.ID, "revoked": true, "revoked_at": rfc3339UTC(res.RevokedAt)})
}

func (s *Server) cycleKey(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Accounts.CycleKey(r.Context(), meta(r), chi.URLParam(r, "key_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	noStore(w)
	writeData(w, http.StatusOK, map[string]any{
		"old_key_id":      res.OldKeyID,
		"old_key_revoked": true,
		"new_key_id":      res.NewKeyID,
		"new_key":         res.NewKey,
		"new_key_prefix":  res.NewKeyPrefix,
	})
}

// decodeRequired decodes the body into req and returns the one required
// string field that field() points at; absent, null or blank is 400
// naming it.
func decodeRequired(r *http.Request, req any, name string, field func() *string) (string, error) {
	if err := decodeJSON(r, req); err != nil {
		return "", err
	}
	v := field()
	if v == nil || strings.TrimSpace(*v) == "" {
		return "", domain.Invalid(name, "field %q is required", name)
	}
	return *v, nil
}

// noStore keeps responses that carry a secret out of every cache.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
}

// rfc3339UTC formats a timestamp the way every response does: RFC 3339,
// UTC, whole seconds.
func rfc3339UTC(t time.Time) string { return t.UTC().Format(time.RFC3339) }
