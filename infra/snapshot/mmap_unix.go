//go:build unix

package snapshot

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps path read-only: the pages of an image are read from the
// page cache as the decoder walks them and count as file-backed memory,
// not anonymous. An empty file is read, not mapped.
func mapFile(path string) ([]byte, func() error, fileID, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fileID{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fileID{}, err
	}
	id, err := identity(f)
	if err != nil {
		return nil, nil, fileID{}, err
	}
	if st.Size() == 0 {
		return nil, func() error { return nil }, id, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fileID{}, err
	}
	return data, func() error { return unix.Munmap(data) }, id, nil
}

// identity is what changes whenever a file's content may have: its
// device and inode, size, and modification and status change times (the
// last cannot be set back: any write, truncation, utimes or replacement
// moves it).
func identity(f *os.File) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return fileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: uint64(st.Size), Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, nil
}
