//go:build windows

package diskspace

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// freeBytes is the space the caller may still use on the volume that
// holds dir.
func freeBytes(dir string) (uint64, error) {
	path, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var free, total, totalFree uint64
	if err := windows.GetDiskFreeSpaceEx(path, &free, &total, &totalFree); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return free, nil
}
