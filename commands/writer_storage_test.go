//go:build linux

package commands_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/diskspace"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// A write that reached the log just as storage filled up is told at once
// that it is stored (write_not_yet_visible, marked ErrStorageFull), not
// after the visibility timeout: the read models hold until space is freed.
func TestWriteStoredAsStorageFillsIsReportedAsStoredAtOnce(t *testing.T) {
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, fmt.Sprintf("size=%d", 4<<20)); err != nil {
		t.Fatalf("this test fills a small tmpfs of its own and must mount one (run it as root): mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
	f, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()

	ctx := context.Background()
	// The log itself is elsewhere, with room: its append succeeds.
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := sqlite.NewEventStore(db, time.Millisecond)
	memories := projections.NewMemories(sqlite.NewMemories(db))
	// The engine never runs: no projection applies anything.
	engine := projections.NewEngine(store, slog.New(slog.DiscardHandler), memories)
	engine.UseStorageGuard(diskspace.New(diskspace.Options{Dir: disk}))
	writer := commands.NewEventWriter(store, engine, 10*time.Second)
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-u", UserID: "u"}, RequestID: "test"}

	res, err := writer.Append(ctx, "notes-full", domain.ExpectAny, meta, notePayload{"a"})
	var e *domain.Error
	if !errors.As(err, &e) || e.PublicCode() != commands.WriteNotYetVisibleCode || !errors.Is(err, domain.ErrStorageFull) {
		t.Fatalf("error = %v, want %s marked domain.ErrStorageFull", err, commands.WriteNotYetVisibleCode)
	}
	if events, err := store.ReadAll(ctx, 0, 10); err != nil || len(events) != 1 || events[0].Position != res.LastPosition {
		t.Fatalf("the write is not in the log: %v, %v", events, err)
	}
}
