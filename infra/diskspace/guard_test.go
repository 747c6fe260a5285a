//go:build linux

package diskspace_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/diskspace"
	"github.com/engram-memory/engram/infra/sqlite"
)

// tmpfs mounts a tmpfs of 24 MiB (more than HighWater) for the test.
func tmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", 24<<20)); err != nil {
		t.Fatalf("this test fills a small tmpfs of its own and must mount one (run it as root): mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes path until no byte is left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 1} {
		for err == nil {
			_, err = f.Write(make([]byte, size))
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatal(err)
		}
		err = nil
	}
}

func within(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Appends on a full disk are refused with KindStorageFull and store
// nothing; once space is freed they are taken again.
func TestAppendsAreRefusedWhileTheDiskIsFull(t *testing.T) {
	disk := tmpfs(t)
	ctx := within(t)
	db, err := sqlite.Open(ctx, filepath.Join(disk, "data"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	guard := diskspace.New(diskspace.Options{Dir: disk, IsFull: []func(error) bool{sqlite.IsStorageFull}, Reclaim: db.Reclaim})
	store := guard.Appends(sqlite.NewEventStore(db, 10*time.Millisecond))
	event := []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}}
	if _, err := store.Append(ctx, "s", domain.ExpectAny, event); err != nil {
		t.Fatal(err)
	}

	fill(t, filepath.Join(disk, "filler"))
	for i := range 3 {
		_, err := store.Append(ctx, "s", domain.ExpectAny, event)
		if domain.ErrorKind(err) != domain.KindStorageFull || !errors.Is(err, domain.ErrStorageFull) {
			t.Fatalf("append %d on a full disk: %v, want KindStorageFull", i, err)
		}
	}
	if head, err := store.Head(ctx); err != nil || head != 1 {
		t.Errorf("after the refused appends the log head is %d (%v), want 1: nothing stored", head, err)
	}
	if guard.Full(ctx) == nil {
		t.Error("Full is nil on a full disk")
	}

	if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := guard.WaitForSpace(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, "s", domain.ExpectAny, event); err != nil {
		t.Fatalf("append once space was freed: %v", err)
	}
}

func TestCheck(t *testing.T) {
	adapterFull := errors.New("adapter: disk full")
	for _, tc := range []struct {
		name     string
		err      error
		wantFull bool
	}{
		{"nil", nil, false},
		{"ENOSPC", &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{"an adapter's own", fmt.Errorf("commit: %w", adapterFull), true},
		{"another error", errors.New("constraint failed"), false},
		{"EIO", &fs.PathError{Op: "write", Path: "x", Err: syscall.EIO}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guard := diskspace.New(diskspace.Options{Dir: tmpfs(t), IsFull: []func(error) bool{func(err error) bool { return errors.Is(err, adapterFull) }}})
			got := guard.Check(tc.err)
			if !errors.Is(got, tc.err) {
				t.Errorf("Check(%v) = %v, which lost the error", tc.err, got)
			}
			if errors.Is(got, domain.ErrStorageFull) != tc.wantFull || (guard.Full(context.Background()) != nil) != tc.wantFull {
				t.Errorf("Check(%v) = %v, Full = %v; want storage full: %v", tc.err, got, guard.Full(context.Background()), tc.wantFull)
			}
		})
	}
}

// Storage has room again only once the space the failed writes took is
// given back: a failing Reclaim keeps it full.
func TestRoomAgainOnlyOnceReclaimed(t *testing.T) {
	ctx := within(t)
	var reclaimErr atomic.Pointer[error]
	stuck := errors.New("readers keep the WAL")
	reclaimErr.Store(&stuck)
	guard := diskspace.New(diskspace.Options{Dir: tmpfs(t), Reclaim: func(context.Context) error { return *reclaimErr.Load() }})
	guard.Check(syscall.ENOSPC)

	time.Sleep(2 * diskspace.ProbeInterval)
	if guard.Full(ctx) == nil {
		t.Fatal("storage has room again though Reclaim failed")
	}
	var none error
	reclaimErr.Store(&none)
	if err := guard.WaitForSpace(ctx); err != nil {
		t.Fatalf("storage never had room again once Reclaim succeeded: %v", err)
	}
}
