//go:build unix

package datadir

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a directory that belongs to another user: chmod-ing
// it to 0700 would not make it private, since its owner keeps every right
// over it (and could swap its files under us).
func checkOwner(dir string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s is owned by uid %d, not by this user (uid %d); give engram a directory of its own", dir, st.Uid, uid)
	}
	return nil
}
