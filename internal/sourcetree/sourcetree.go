// Package sourcetree walks the repository's own files, for the tests that
// read the whole tree (the docs' citations, the architecture's imports,
// the error codes) and for the test binary's source hash.
//
// make test runs the SDK suites beside the race pass, and they write into
// the tree while those tests walk it: npm's node_modules, tsc's dist,
// mypy's cache, Python's __pycache__, pip reinstalling the SDK into the
// virtual environment under bin/. None of that is a source, so a walk does
// not enter it (IsSourceDir), and a path that disappears between the
// listing of its directory and its visit is passed over rather than failing
// the walk: only what the walk never listed or still finds can fail it.
package sourcetree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IsSourceDir reports whether a directory named name may hold sources of
// the repository. The go command's own rule leaves out names starting
// with "." or "_" (.git, .mypy_cache, __pycache__) and testdata; go.mod's
// ignore directive adds node_modules and bin (make test's installs and
// binaries); dist is tsc's output and bench-out the benchmarks'.
func IsSourceDir(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return false
	}
	switch name {
	case "testdata", "node_modules", "bin", "dist", "bench-out":
		return false
	}
	return true
}

// Walk calls visit for root and for every file and directory under it
// that IsSourceDir keeps, in lexical order, as filepath.WalkDir does:
// visit may return filepath.SkipDir or filepath.SkipAll. A directory that
// cannot be read, or a visit that fails, for a path that no longer exists
// is passed over: it vanished mid-walk (a file removed after its
// directory was listed fails the read visit makes of it). Any other error
// ends the walk and is returned.
func Walk(root string, visit func(path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != root && vanished(path) {
				return nil // a directory's listing that failed skips only that directory
			}
			return err
		}
		if d.IsDir() && path != root && !IsSourceDir(d.Name()) {
			return filepath.SkipDir
		}
		err = visit(path, d)
		if err == nil || errors.Is(err, filepath.SkipDir) || errors.Is(err, filepath.SkipAll) {
			return err
		}
		if path != root && vanished(path) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return err
	})
}

// vanished reports whether path no longer exists.
func vanished(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}
