//go:build linux

// Package tmpfstest gives a test a small file system of its own to fill,
// for the tests of what a full disk does. Mounting needs root.
package tmpfstest

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory for the test,
// unmounted at cleanup (after what the test starts later is stopped).
func Mount(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("this test fills a small tmpfs of its own and must mount one (run it as root): mount: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill appends to path until its file system has no byte left.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		for {
			if _, err := f.Write(chunk[:size]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}
