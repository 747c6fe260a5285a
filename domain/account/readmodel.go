package account

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain"
)

// ReadModel is the accounts read model's store: users, verification
// tokens, API keys and sessions (projections/accounts.go feeds it).
type ReadModel = domain.ReadModelStore[ReadModelTx]

// ReadModelTx changes the accounts read model within one batch. Every
// operation returns an error; none checks a rule (the user streams
// decided them), so applying the same log always gives the same state.
type ReadModelTx interface {
	// AddUser records a registered, not yet verified user of stream.
	AddUser(ctx context.Context, stream string, u UserRegistered) error
	AddVerificationToken(ctx context.Context, v VerificationIssued) error
	// MarkVerified marks the user verified and the token used, at.
	MarkVerified(ctx context.Context, userID, tokenHash string, at time.Time) error
	AddKey(ctx context.Context, userID string, k KeyRecord) error
	// RevokeKey deactivates the key and ends the sessions started from it.
	RevokeKey(ctx context.Context, keyID string, at time.Time) error
	AddSession(ctx context.Context, s SessionStarted) error
	// KeyUsed records a use of the user's key; an older use than the one
	// recorded changes nothing (batches from several nodes interleave).
	KeyUsed(ctx context.Context, userID string, u KeyUse) error
}
