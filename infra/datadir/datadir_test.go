//go:build unix

package datadir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/engram-memory/engram/infra/datadir"
)

func TestSecondAcquireIsRefusedWithTheHoldersPID(t *testing.T) {
	dir := t.TempDir()
	first, err := datadir.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = datadir.Acquire(dir)
	var held *datadir.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("second Acquire: %v, want a *HeldError", err)
	}
	if held.PID != os.Getpid() || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second Acquire: %q (pid %d), want it to name pid %d", err, held.PID, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := datadir.Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	again.Release()
}

// RecordedPID names the holder without taking the lock, and is 0 for a
// directory that was never held.
func TestRecordedPIDNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	if pid := datadir.RecordedPID(dir); pid != 0 {
		t.Errorf("RecordedPID of a directory never held = %d, want 0", pid)
	}
	lock, err := datadir.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if pid := datadir.RecordedPID(dir); pid != os.Getpid() {
		t.Errorf("RecordedPID = %d, want the holder's %d", pid, os.Getpid())
	}
	if _, err := datadir.Acquire(dir); err == nil {
		t.Error("RecordedPID released or took the lock: a second Acquire succeeded")
	}
}

// A stale pid in the file (its process is gone) is no lock: the flock is
// what counts, and the new holder's pid replaces the old, longer one.
func TestLockFileOfAGoneProcessIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, datadir.LockName), []byte("4194303\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := datadir.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	got, err := os.ReadFile(filepath.Join(dir, datadir.LockName))
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(os.Getpid()) + "\n"; string(got) != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}
	fi, err := os.Stat(filepath.Join(dir, datadir.LockName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file mode %o, want 600", fi.Mode().Perm())
	}
}

func TestMakePrivate(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	for _, tc := range []struct {
		name    string
		mode    os.FileMode // of a pre-existing dir; 0: none
		sticky  bool
		owner   int // uid to chown a pre-existing dir to; 0: ours
		wantErr string
	}{
		{name: "missing dir and parents are created 0700"},
		{name: "existing 0755 dir is restricted", mode: 0o755},
		{name: "existing 0700 dir is kept", mode: 0o700},
		{name: "a shared sticky dir is refused", mode: 0o777, sticky: true, wantErr: "shared directory"},
		{name: "another user's dir is refused", mode: 0o755, owner: 65534, wantErr: "owned by uid 65534"},
		{name: "another user's private dir is refused", mode: 0o700, owner: 65534, wantErr: "owned by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "b")
			if tc.mode != 0 {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				mode := tc.mode
				if tc.sticky {
					mode |= os.ModeSticky
				}
				if err := os.Chmod(dir, mode); err != nil {
					t.Fatal(err)
				}
				if tc.owner != 0 {
					if err := os.Chown(dir, tc.owner, tc.owner); err != nil {
						t.Fatalf("this case needs to give a directory to uid %d (run the tests as root): %v", tc.owner, err)
					}
				}
			}
			err := datadir.MakePrivate(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("MakePrivate: %v, want an error containing %q", err, tc.wantErr)
				}
				fi, err := os.Stat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != tc.mode.Perm() {
					t.Errorf("a refused dir was changed to mode %o, want it left at %o", fi.Mode().Perm(), tc.mode.Perm())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{dir, filepath.Dir(dir)} {
				fi, err := os.Stat(d)
				if err != nil {
					t.Fatal(err)
				}
				if d == dir || tc.mode == 0 {
					if fi.Mode().Perm() != 0o700 {
						t.Errorf("%s has mode %o, want 700", d, fi.Mode().Perm())
					}
				}
			}
		})
	}
}
