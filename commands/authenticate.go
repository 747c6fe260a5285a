package commands

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// Authenticate resolves a bearer credential to its actor; it implements
// api.Authenticator. An API key must be active; a session token must be
// unexpired and its key not revoked (revoking a key ends its sessions).
// Anything else is 401, with one message that does not say which check
// failed. Secrets are looked up by their SHA-256 and compared in constant
// time; a use of an API key is recorded for last_used_at.
func (a *Accounts) Authenticate(ctx context.Context, credential string) (domain.Actor, error) {
	hash := account.HashSecret(credential)
	switch {
	case account.LooksLikeAPIKey(credential):
		k, found, err := a.cfg.Reader.KeyByHash(ctx, hash)
		if err != nil {
			return domain.Actor{}, err
		}
		if !found || !account.SameHash(k.Hash, hash) || !k.Active() {
			return domain.Actor{}, account.ErrInvalidCredential()
		}
		a.recordUse(k.UserID, k.ID, a.now())
		return domain.Actor{Kind: domain.ActorKey, ID: k.ID, UserID: k.UserID}, nil
	case account.LooksLikeSessionToken(credential):
		s, found, err := a.cfg.Reader.SessionByHash(ctx, hash)
		if err != nil {
			return domain.Actor{}, err
		}
		if !found || !account.SameHash(s.Hash, hash) || !s.ValidAt(a.now()) {
			return domain.Actor{}, account.ErrInvalidCredential()
		}
		return domain.Actor{Kind: domain.ActorSession, ID: s.ID, UserID: s.UserID}, nil
	}
	return domain.Actor{}, account.ErrInvalidCredential()
}
