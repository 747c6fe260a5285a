// Package datadir owns a data directory on disk: it keeps the directory
// private to its user and makes one process its only writer.
//
// A writer holds an exclusive flock(2) on <dir>/engram.lock (LockFileEx on
// Windows) for as long as it runs; the file holds the writer's pid so that a refused process can
// name it. The kernel drops the lock when the holder exits, however it
// exits (SIGKILL included), so a stale lock cannot outlive its process; the
// file itself stays and is reused. Readers take no lock: the database's own
// locking lets them read beside the writer, and a reader must never stop
// the writer from starting.
package datadir

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// LockName is the lock file inside a data directory.
const LockName = "engram.lock"

// MakePrivate creates dir and its missing parents with mode 0700, and
// brings an existing dir to 0700: it holds secrets (verification mails,
// hashed credentials) that no other user may read. It refuses a shared
// directory such as /tmp (world-writable with the sticky bit), and one that
// another user owns, rather than take it over.
func MakePrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode()&fs.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%s is a shared directory (mode %o); give engram a directory of its own", dir, fi.Mode().Perm())
	}
	if err := checkOwner(dir, fi); err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restrict %s to its owner: %w", dir, err)
		}
	}
	return nil
}

// Lock is the exclusive hold of one data directory.
type Lock struct {
	f *os.File
}

// HeldError is returned when another process holds the data directory.
type HeldError struct {
	Dir string
	PID int // 0 when the holder's pid could not be read
}

func (e *HeldError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "another engram process (pid " + strconv.Itoa(e.PID) + ")"
	}
	return fmt.Sprintf("data dir %s is in use by %s; stop it first or choose another --data-dir", e.Dir, holder)
}

// Acquire makes dir private (see MakePrivate) and takes its lock, at once
// or not at all: when another process holds it, Acquire returns a
// *HeldError naming that process.
func Acquire(dir string) (*Lock, error) {
	if err := MakePrivate(dir); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir: open lock: %w", err)
	}
	if held, err := tryLock(f); held || err != nil {
		defer f.Close()
		if held {
			return nil, &HeldError{Dir: dir, PID: readPID(f)}
		}
		return nil, fmt.Errorf("data dir: lock %s: %w", path, err)
	}
	if err := writePID(f, os.Getpid()); err != nil {
		f.Close()
		return nil, fmt.Errorf("data dir: record pid in %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// writePID overwrites the file with pid. It writes before it truncates, so
// a reader racing with it sees the new pid on the first line, never an
// empty file.
func writePID(f *os.File, pid int) error {
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	line := []byte(strconv.Itoa(pid) + "\n")
	if _, err := f.WriteAt(line, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(line)))
}

// RecordedPID returns the pid that the last holder of dir's lock recorded
// in it, 0 when there is none. It takes no lock: it names the holder
// when another channel (a live server's admin socket) already showed that
// the directory is in use.
func RecordedPID(dir string) int {
	f, err := os.Open(filepath.Join(dir, LockName))
	if err != nil {
		return 0
	}
	defer f.Close()
	return readPID(f)
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	first, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	pid, err := strconv.Atoi(string(first))
	if err != nil {
		return 0
	}
	return pid
}

// Release gives the directory up. It is safe on a nil Lock (a reader's).
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	// Closing the last descriptor of the file drops the flock.
	return l.f.Close()
}
