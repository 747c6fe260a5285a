//go:build linux

package commands_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/diskspace"
	"github.com/engram-memory/engram/internal/memenvtest"
	"github.com/engram-memory/engram/internal/tmpfstest"
)

// A write that reached the log just as storage filled up is told at once
// that it is stored (write_not_yet_visible, marked ErrStorageFull), not
// after the visibility timeout: the read models hold until space is freed.
func TestWriteStoredAsStorageFillsIsReportedAsStoredAtOnce(t *testing.T) {
	disk := tmpfstest.Mount(t, 4<<20)
	tmpfstest.Fill(t, filepath.Join(disk, "filler"))

	ctx := context.Background()
	// The log itself is elsewhere, with room: its append succeeds.
	idle := newIdleLog(t)
	idle.engine.UseStorageGuard(diskspace.New(diskspace.Options{Dir: disk}))
	writer := commands.NewEventWriter(idle.store, idle.engine, 10*time.Second)
	meta := memenvtest.Meta("u")

	res, err := writer.Append(ctx, "notes-full", domain.ExpectAny, meta, notePayload{"a"})
	var e *domain.Error
	if !errors.As(err, &e) || e.PublicCode() != commands.WriteNotYetVisibleCode || !errors.Is(err, domain.ErrStorageFull) {
		t.Fatalf("error = %v, want %s marked domain.ErrStorageFull", err, commands.WriteNotYetVisibleCode)
	}
	if events, err := idle.store.ReadAll(ctx, 0, 10); err != nil || len(events) != 1 || events[0].Position != res.LastPosition {
		t.Fatalf("the write is not in the log: %v, %v", events, err)
	}
}
