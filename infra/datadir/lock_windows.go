//go:build windows

package datadir

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is the one byte locked: far past the pid, since Windows locks
// are mandatory and a refused process must still read the pid.
const lockOffset = 1 << 30

// tryLock takes an exclusive lock on one byte of f without waiting; held
// reports that another handle has it.
func tryLock(f *os.File) (held bool, err error) {
	ol := &windows.Overlapped{Offset: lockOffset}
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	return false, err
}
