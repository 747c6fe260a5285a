package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

// DefaultUsageFlushInterval is how often recorded key uses become events.
const DefaultUsageFlushInterval = 30 * time.Second

// UsageRecorder keeps the last use of each API key in memory and appends
// the uses as APIKeysUsed events at most once per interval (and on Flush),
// so last_used_at costs one event per user and interval, not one per
// request. Uses not yet flushed are lost if the process dies; that costs
// at most one interval of last_used_at precision, never a write a client
// saw acknowledged.
type UsageRecorder struct {
	writer   Writer
	interval time.Duration
	logger   *slog.Logger

	flushMu sync.Mutex // one flush at a time
	mu      sync.Mutex
	pending map[string]keyUse // by key id
}

type keyUse struct {
	userID string
	at     time.Time
}

// NewUsageRecorder returns a recorder; interval <= 0 means the default,
// a nil logger discards.
func NewUsageRecorder(writer Writer, interval time.Duration, logger *slog.Logger) *UsageRecorder {
	if interval <= 0 {
		interval = DefaultUsageFlushInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &UsageRecorder{writer: writer, interval: interval, logger: logger, pending: make(map[string]keyUse)}
}

// Record notes that a key was used at at.
func (r *UsageRecorder) Record(userID, keyID string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u, ok := r.pending[keyID]; !ok || at.After(u.at) {
		r.pending[keyID] = keyUse{userID: userID, at: at}
	}
}

// LastUse is the latest use of a key that is not yet in the log (an entry
// stays until its flush is visible to the read model, so a listing never
// goes back in time).
func (r *UsageRecorder) LastUse(keyID string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.pending[keyID]
	return u.at, ok
}

// Run flushes every interval until ctx ends, then flushes once more.
// Stop it before the projection engine: a flush waits until its events
// are visible.
func (r *UsageRecorder) Run(ctx context.Context) error {
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
				r.logger.Warn("key usage flush failed; will retry", "error", err)
			}
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := r.Flush(final); err != nil {
				return fmt.Errorf("workers: final key usage flush: %w", err)
			}
			return nil
		}
	}
}

// Flush appends every pending use, one APIKeysUsed event per user, and
// waits until they are visible. Uses that fail to append stay pending.
func (r *UsageRecorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	byUser := r.snapshot()
	users := make([]string, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	slices.Sort(users)
	var errs []error
	for _, userID := range users {
		uses := byUser[userID]
		if err := r.flushUser(ctx, userID, uses); err != nil {
			errs = append(errs, err)
			continue
		}
		r.forget(uses)
	}
	return errors.Join(errs...)
}

func (r *UsageRecorder) snapshot() map[string][]account.KeyUse {
	r.mu.Lock()
	defer r.mu.Unlock()
	byUser := make(map[string][]account.KeyUse)
	for keyID, u := range r.pending {
		byUser[u.userID] = append(byUser[u.userID], account.KeyUse{KeyID: keyID, LastUsedAt: u.at})
	}
	for _, uses := range byUser {
		slices.SortFunc(uses, func(a, b account.KeyUse) int { return strings.Compare(a.KeyID, b.KeyID) })
	}
	return byUser
}

func (r *UsageRecorder) flushUser(ctx context.Context, userID string, uses []account.KeyUse) error {
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "key-usage", UserID: userID}, Source: domain.SourceSystem}
	// Uses go to a stream of their own, so deciding on a busy account never
	// replays thousands of them; ExpectAny: recording a use depends on no
	// state, so it never needs to re-decide.
	if _, err := r.writer.Append(ctx, account.UsageStream(userID), domain.ExpectAny, meta, &account.APIKeysUsed{UserID: userID, Uses: uses}); err != nil {
		return fmt.Errorf("workers: flush key usage of %s: %w", userID, err)
	}
	return nil
}

// forget drops flushed uses, unless the key was used again meanwhile.
func (r *UsageRecorder) forget(uses []account.KeyUse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, use := range uses {
		if u, ok := r.pending[use.KeyID]; ok && !u.at.After(use.LastUsedAt) {
			delete(r.pending, use.KeyID)
		}
	}
}
