//go:build linux

package projections_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/diskspace"
	"github.com/engram-memory/engram/internal/tmpfstest"
	"github.com/engram-memory/engram/projections"
)

// fileProjection writes a file of 256 KiB per batch into dir, as a read
// model writes pages: on a full disk its Apply fails with ENOSPC.
type fileProjection struct {
	dir      string
	mu       sync.Mutex
	pos      uint64
	attempts int
}

func (p *fileProjection) Name() string { return "files" }
func (p *fileProjection) Position(context.Context) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pos, nil
}
func (p *fileProjection) Reset(context.Context) error { return nil }
func (p *fileProjection) Apply(_ context.Context, events []domain.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts++
	last := events[len(events)-1].Position
	if last <= p.pos {
		return nil
	}
	path := filepath.Join(p.dir, fmt.Sprintf("batch-%d", last))
	if err := os.WriteFile(path, make([]byte, 256<<10), 0o600); err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	p.pos = last
	return nil
}
func (p *fileProjection) state() (attempts int, pos uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts, p.pos
}

// A batch that fails for want of space is held, not retried, while
// storage is full (each retry on a full disk only grows the files that
// filled it); a write waiting for it is told at once; once space is freed
// the batch applies, without a restart.
func TestEngineHoldsABatchWhileStorageIsFull(t *testing.T) {
	disk := tmpfstest.Mount(t, 24<<20)
	filler := filepath.Join(disk, "filler")
	tmpfstest.Fill(t, filler)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	guard := diskspace.New(diskspace.Options{Dir: disk, Logger: logger})
	files := &fileProjection{dir: disk}
	store := newStore(t)
	engine := projections.NewEngine(store, logger, files)
	engine.UseStorageGuard(guard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go engine.Run(ctx)

	pos := appendN(t, store, 1)
	fullCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if err := engine.WaitFor(fullCtx, pos); !errors.Is(err, domain.ErrStorageFull) {
		t.Errorf("WaitFor on a full disk: %v, want an error marked domain.ErrStorageFull at once", err)
	}
	// Long enough for the quick retries and several redeliveries, and for
	// the guard to measure the space twice.
	time.Sleep(2500 * time.Millisecond)
	if attempts, at := files.state(); attempts != 1 || at != 0 {
		t.Errorf("while storage is full the batch was tried %d times (applied up to %d); want 1 try, then held", attempts, at)
	}
	if st := engine.Status()["files"]; st.ParkedSince == nil || st.Error == "" {
		t.Errorf("the held batch does not show in Status: %+v", st)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitCtx, done := context.WithTimeout(ctx, 20*time.Second)
	defer done()
	if err := guard.WaitForSpace(waitCtx); err != nil {
		t.Fatalf("the guard never saw the space freed: %v", err)
	}
	if err := engine.WaitFor(waitCtx, pos); err != nil {
		t.Fatalf("WaitFor once space was freed: %v", err)
	}
	if attempts, at := files.state(); attempts != 2 || at != pos {
		t.Errorf("after space was freed: %d tries, applied up to %d; want 2 tries up to %d", attempts, at, pos)
	}
}

// A replay applies its chunks as live delivery applies a batch (one apply
// path): a chunk that fails for want of space comes back marked
// domain.ErrStorageFull, and the guard records that storage is full, so
// `engram projections rebuild` is told what the server would have been.
func TestReplayOnAFullDiskSaysStorageIsFull(t *testing.T) {
	disk := tmpfstest.Mount(t, 24<<20)
	tmpfstest.Fill(t, filepath.Join(disk, "filler"))

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	guard := diskspace.New(diskspace.Options{Dir: disk, Logger: logger})
	store := newStore(t)
	engine := projections.NewEngine(store, logger, &fileProjection{dir: disk})
	engine.UseStorageGuard(guard)
	appendN(t, store, 1)
	ctx := context.Background()

	for name, replay := range map[string]func(context.Context, ...string) error{"CatchUp": engine.CatchUp, "Rebuild": engine.Rebuild} {
		if err := replay(ctx); !errors.Is(err, domain.ErrStorageFull) {
			t.Errorf("%s on a full disk: %v, want an error marked domain.ErrStorageFull", name, err)
		}
	}
	if guard.Full(ctx) == nil {
		t.Error("after the replays failed on a full disk, the guard does not say storage is full")
	}
}
