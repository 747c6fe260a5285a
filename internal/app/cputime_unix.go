//go:build unix

package app

import (
	"syscall"
	"time"
)

// processCPU is the user and system time the process has used so far
// (every thread), or 0 when the kernel does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
