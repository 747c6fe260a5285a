package projections

import (
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// AccountsProjectionName names the accounts read model (its checkpoint and
// `engram projections rebuild accounts`).
const AccountsProjectionName = "accounts"

// NewAccounts returns the projection of the user streams into the
// accounts read model.
func NewAccounts(store account.ReadModel) Projection {
	return &readModel[account.ReadModelTx]{name: AccountsProjectionName, store: store, apply: applyAccountEvent, events: Events()}
}

func applyAccountEvent(ctx context.Context, tx account.ReadModelTx, e domain.Event) error {
	p, err := e.Decoded()
	if err != nil {
		return err
	}
	switch ev := p.(type) {
	case *account.UserRegistered:
		return tx.AddUser(ctx, e.Stream, *ev)
	case *account.VerificationIssued:
		return tx.AddVerificationToken(ctx, *ev)
	case *account.UserVerified:
		if err := tx.MarkVerified(ctx, ev.UserID, ev.TokenHash, ev.VerifiedAt); err != nil {
			return err
		}
		return tx.AddKey(ctx, ev.UserID, ev.InitialKey)
	case *account.APIKeyCreated:
		return tx.AddKey(ctx, ev.UserID, ev.Key)
	case *account.APIKeyRevoked:
		return tx.RevokeKey(ctx, ev.KeyID, ev.RevokedAt)
	case *account.APIKeyCycled:
		if err := tx.RevokeKey(ctx, ev.OldKeyID, ev.RevokedAt); err != nil {
			return err
		}
		return tx.AddKey(ctx, ev.UserID, ev.NewKey)
	case *account.SessionStarted:
		return tx.AddSession(ctx, *ev)
	case *account.APIKeysUsed:
		for _, u := range ev.Uses {
			if err := tx.KeyUsed(ctx, ev.UserID, u); err != nil {
				return err
			}
		}
	}
	return nil
}
