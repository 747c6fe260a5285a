//go:build unix

package snapshot

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps path read-only: the pages of an image are read from the
// page cache as the decoder walks them and count as file-backed memory,
// not anonymous. An empty file is read, not mapped.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return nil, func() error { return nil }, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return unix.Munmap(data) }, nil
}
