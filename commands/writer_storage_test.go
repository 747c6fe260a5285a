//go:build linux

package commands_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/diskspace"
	"github.com/engram-memory/engram/internal/memenvtest"
)

// A write that reached the log just as storage filled up is told at once
// that it is stored (write_not_yet_visible, marked ErrStorageFull), not
// after the visibility timeout: the read models hold until space is freed.
func TestWriteStoredAsStorageFillsIsReportedAsStoredAtOnce(t *testing.T) {
	disk := mountTmpfs(t, 4<<20)
	fillDisk(t, filepath.Join(disk, "filler"), 4096)

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

// mountTmpfs mounts a tmpfs of size bytes on a new directory for the
// test, unmounted at cleanup. It needs root.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("this test fills a small tmpfs of its own and must mount one (run it as root): mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes path, chunk bytes at a time, until its file system
// takes no more.
func fillDisk(t *testing.T, path string, chunk int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, chunk))
	}
	f.Close()
}
