// Package diskspace watches the space left on the file system that holds
// the data dir, so that a full disk is answered at once and clearly, held
// rather than retried into, and left without a restart.
//
// A Guard is full from the first write that fails for want of space (or
// from the moment less than LowWater bytes are free) until HighWater bytes
// are free again and the storage has given back what its failed writes
// took (Options.Reclaim). While it is full, appends are refused before
// they touch the log (KindStorageFull, 507), and the projections hold
// their failed batches instead of retrying them: on a full disk every
// retry grows the SQLite WAL by the frames it wrote before it failed, and
// after space was freed those retries filled it again.
//
// Storage on another machine (Options.Remote: the PostgreSQL server) is
// full from its first out-of-space error until a probe write to it
// succeeds: the free space of the data dir's file system says nothing of
// its disk.
package diskspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Free-space thresholds: storage counts as full below LowWater, and as
// having room again only from HighWater, so that the first writes after a
// full disk do not fill it again at once.
const (
	LowWater  = 1 << 20
	HighWater = 16 << 20
)

// ProbeInterval is how often the free space is measured: at most once per
// interval on the write path, and once per interval while full.
const ProbeInterval = time.Second

// Options configure a Guard.
type Options struct {
	// Dir is a directory on the file system to watch (the data dir).
	Dir string
	// IsFull recognises the storage adapters' own out-of-space errors
	// (SQLite's SQLITE_FULL, PostgreSQL's disk_full); ENOSPC is always one.
	IsFull []func(error) bool
	// Reclaim, when set, gives back the space failed writes took (the
	// SQLite WAL); storage has room again only once it succeeds.
	Reclaim func(context.Context) error
	// Remote, when set, is storage on another machine's disk (the
	// PostgreSQL server of the log or the read models).
	Remote *Remote
	Logger *slog.Logger
}

// Remote is storage whose disk is not the data dir's: its out-of-space
// errors make storage full like local ones, but the free space measured
// here says nothing of it, so storage full for its sake has room again
// only when HasRoom succeeds.
type Remote struct {
	// Name says which storage it is, in logs ("PostgreSQL").
	Name string
	// IsFull recognises its out-of-space errors.
	IsFull func(error) bool
	// HasRoom writes a little to it (postgres.DB.ProbeSpace): nil once it
	// takes writes again.
	HasRoom func(context.Context) error
}

// Guard knows whether storage is full. Its methods are safe for
// concurrent use.
type Guard struct {
	opts Options
	// freeBytes measures the space left on opts.Dir.
	freeBytes func(dir string) (uint64, error)

	// probing is held by the one caller measuring the space; the others
	// answer with the state as it stands.
	probing sync.Mutex

	mu sync.Mutex
	// full is the reason storage is full, nil while it has room;
	// remote is whether Options.Remote is the storage that is full.
	full    error
	remote  bool
	probed  time.Time
	changed chan struct{}
}

// New returns a guard over opts.Dir, which starts with room.
func New(opts Options) *Guard {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{opts: opts, freeBytes: freeBytes, changed: make(chan struct{})}
}

// Full returns why storage is full (wrapping domain.ErrStorageFull), or
// nil while it has room. It measures the space at most once per
// ProbeInterval: while full, to see whether space came back; otherwise,
// to see it run out before a write fails.
func (g *Guard) Full(ctx context.Context) error {
	g.mu.Lock()
	full, due := g.full, time.Since(g.probed) >= ProbeInterval
	g.mu.Unlock()
	if due && g.probing.TryLock() {
		defer g.probing.Unlock()
		g.probe(ctx)
		g.mu.Lock()
		full = g.full
		g.mu.Unlock()
	}
	return full
}

// Changed returns a channel closed when storage next becomes full or has
// room again.
func (g *Guard) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// Check returns err as it is unless it says there is no space left; then
// storage is full from now on, and Check returns err marked with
// domain.ErrStorageFull.
func (g *Guard) Check(err error) error {
	if err == nil || errors.Is(err, domain.ErrStorageFull) {
		return err
	}
	remote := g.opts.Remote != nil && g.opts.Remote.IsFull(err)
	if !remote && !g.isFull(err) {
		return err
	}
	reason := fmt.Errorf("%w: %w", domain.ErrStorageFull, err)
	g.setFrom(reason, remote)
	return reason
}

// WaitForSpace returns once storage has room, measuring the space every
// ProbeInterval while it is full, or with ctx's error.
func (g *Guard) WaitForSpace(ctx context.Context) error {
	for g.Full(ctx) != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g.Changed():
		case <-time.After(ProbeInterval):
		}
	}
	return nil
}

func (g *Guard) isFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	for _, is := range g.opts.IsFull {
		if is(err) {
			return true
		}
	}
	return false
}

// probe measures the free space and changes the state when it crossed
// the threshold of the state it is in.
func (g *Guard) probe(ctx context.Context) {
	g.mu.Lock()
	g.probed = time.Now()
	full, remote := g.full, g.remote
	g.mu.Unlock()
	if full != nil && remote {
		g.probeRemote(ctx)
		return
	}
	free, err := g.freeBytes(g.opts.Dir)
	if err != nil {
		g.opts.Logger.Warn("measuring free space failed", "dir", g.opts.Dir, "error", err)
		return
	}
	switch {
	case full == nil && free < LowWater:
		g.set(fmt.Errorf("%w: %d bytes free on %s, below the %d the server keeps", domain.ErrStorageFull, free, g.opts.Dir, LowWater))
	case full != nil && free >= HighWater:
		if g.opts.Reclaim != nil {
			if err := g.opts.Reclaim(ctx); err != nil {
				g.opts.Logger.Warn("storage has space again but could not reclaim the space of failed writes; writes stay refused", "dir", g.opts.Dir, "free_bytes", free, "error", err)
				return
			}
		}
		g.set(nil)
		g.opts.Logger.Info("storage has room again; writes resume", "dir", g.opts.Dir, "free_bytes", free)
	}
}

// probeRemote asks the remote storage, full until now, whether it takes
// writes again.
func (g *Guard) probeRemote(ctx context.Context) {
	r := g.opts.Remote
	if err := r.HasRoom(ctx); err != nil {
		if !r.IsFull(err) {
			g.opts.Logger.Warn("asking whether storage has room again failed", "storage", r.Name, "error", err)
		}
		return
	}
	g.set(nil)
	g.opts.Logger.Info("storage has room again; writes resume", "storage", r.Name)
}

// set changes the state to full (reason non-nil, for lack of space in
// the data dir's file system) or to having room.
func (g *Guard) set(reason error) { g.setFrom(reason, false) }

// setFrom is set, remote saying whether Options.Remote is what is full.
func (g *Guard) setFrom(reason error, remote bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if (g.full == nil) == (reason == nil) {
		return
	}
	g.remote = remote && reason != nil
	if reason != nil {
		g.opts.Logger.Error("storage is full: writes are refused until space is freed", "dir", g.opts.Dir, "reason", reason)
		// Measure from now: space freed at once is seen a probe later.
		g.probed = time.Now()
	}
	g.full = reason
	close(g.changed)
	g.changed = make(chan struct{})
}

// Appends returns store with its appends (Append, AppendStreams) refused
// at once while storage is full, and an append that failed for want of space marking it full; both
// answer KindStorageFull (nothing was stored).
func (g *Guard) Appends(store domain.EventStore) domain.EventStore {
	return guardedStore{EventStore: store, guard: g}
}

type guardedStore struct {
	domain.EventStore
	guard *Guard
}

func (s guardedStore) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	if full := s.guard.Full(ctx); full != nil {
		return domain.AppendResult{}, refusal(full)
	}
	res, err := s.EventStore.Append(ctx, stream, expected, events)
	if err = s.guard.Check(err); errors.Is(err, domain.ErrStorageFull) {
		return res, refusal(err)
	}
	return res, err
}

func (s guardedStore) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	if full := s.guard.Full(ctx); full != nil {
		return nil, refusal(full)
	}
	res, err := s.EventStore.AppendStreams(ctx, parts)
	if err = s.guard.Check(err); errors.Is(err, domain.ErrStorageFull) {
		return res, refusal(err)
	}
	return res, err
}

// refusal is the client's answer to a write refused because storage is
// full (reason wraps domain.ErrStorageFull): nothing was stored, and the
// same request may be sent again once space is freed.
func refusal(reason error) *domain.Error {
	e := domain.Errorf(domain.KindStorageFull, "the server's storage is full, so nothing of this request was stored; send it again once space is freed (GET /readyz says when)")
	e.Err = reason
	return e.WithDetail(domain.DetailRetryAfterSeconds, 10)
}
