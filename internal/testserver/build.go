package testserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/engram-memory/engram/internal/sourcetree"
)

// MainPackage is the import path of the engram binary.
const MainPackage = "github.com/engram-memory/engram/cmd/engram"

// BinaryEnv names the engram binary that `make test` builds once and hands
// to every package's tests.
const BinaryEnv = "ENGRAM_TEST_BINARY"

// RaceEnv, set to 1 without BinaryEnv, makes Binary build the engram binary
// with the race detector: `ENGRAM_TEST_RACE=1 go test -race -run X ./internal/cli`
// reproduces the race smoke pass of `make test`.
const RaceEnv = "ENGRAM_TEST_RACE"

// Build compiles the engram binary into dir and returns its path. race
// builds it with the race detector, which tests want and benchmarks do not.
// It must run inside the module (any directory of the repository).
func Build(ctx context.Context, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "engram")
	if err := build(ctx, bin, race); err != nil {
		return "", err
	}
	return bin, nil
}

func build(ctx context.Context, out string, race bool) error {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	args = append(args, MainPackage)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if !race {
		// Static, as `make build` and the Dockerfile build it; the race
		// detector needs cgo.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", MainPackage, err)
	}
	return nil
}

// Binary returns the engram binary for end-to-end tests. Under `make test`
// that is $ENGRAM_TEST_BINARY, built once for every package. Without it
// (plain `go test`), the binary is built once into the user's cache
// directory under a hash of the module's sources, so the packages of one
// `go test ./...` share one build and an unchanged tree builds nothing.
//
// It is built without the race detector unless $ENGRAM_TEST_RACE is 1: a
// race-built server runs every request several times slower, and the
// end-to-end suites spend most of their time waiting for it, while the
// in-process tests (`go test -race`) already run the same code under the
// detector. `make test` adds one smoke pass of end-to-end tests against a
// race-built binary, whose reports fail the test (Start).
func Binary(ctx context.Context) (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		info, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("testserver: %s: %w", BinaryEnv, err)
		}
		if info.IsDir() || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("testserver: %s=%s is not an executable file", BinaryEnv, bin)
		}
		return filepath.Abs(bin)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	race := os.Getenv(RaceEnv) == "1"
	key, err := sourceHash(root, race)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testserver: %w", err)
	}
	return cachedBuild(ctx, filepath.Join(cache, "engram-test-bin"), key, race)
}

// cachedBuild returns dir/key/engram, building it unless it exists. A lock
// file makes the test binaries of concurrently tested packages wait for
// one build instead of each running their own.
func cachedBuild(ctx context.Context, dir, key string, race bool) (string, error) {
	keyDir := filepath.Join(dir, key)
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return "", fmt.Errorf("testserver: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(keyDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("testserver: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("testserver: lock %s: %w", keyDir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	bin := filepath.Join(keyDir, "engram")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Build beside the final name and rename, so a build cut off half-way
	// never leaves a binary that looks complete.
	partial := bin + ".partial"
	if err := build(ctx, partial, race); err != nil {
		return "", err
	}
	if err := os.Rename(partial, bin); err != nil {
		return "", fmt.Errorf("testserver: %w", err)
	}
	pruneStale(dir, key, 7*24*time.Hour)
	return bin, nil
}

// pruneStale removes cached binaries of other source trees that were built
// more than maxAge ago, so the cache does not grow with every edit.
func pruneStale(dir, keep string, maxAge time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > maxAge {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// moduleRoot is the nearest directory at or above the working directory
// (a package directory, under go test) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testserver: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testserver: no go.mod above the working directory")
		}
		dir = parent
	}
}

// sourceHash hashes what goes into the binary: every file of the module
// except tests, test data and documentation (embedded files included), the
// Go toolchain, the build environment and whether the race detector is on.
func sourceHash(root string, race bool) (string, error) {
	var files []string
	err := sourcetree.Walk(root, func(path string, d fs.DirEntry) error {
		name := d.Name()
		if d.Type().IsRegular() && !strings.HasSuffix(name, "_test.go") && !strings.HasSuffix(name, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("testserver: hash sources: %w", err)
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintf(h, "race=%t\x00%s\x00%s/%s\x00", race, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, env := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "PATH"} {
		fmt.Fprintf(h, "%s=%s\x00", env, os.Getenv(env))
	}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%s\x00", rel)
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("testserver: hash sources: %w", err)
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("testserver: hash sources: %w", err)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}
