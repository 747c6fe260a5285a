//go:build unix

package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// refusedAtOnce runs the binary with args over a data dir another process
// holds, and checks that it exits with status 1 within seconds, naming the
// holder's pid.
func refusedAtOnce(t *testing.T, holderPID int, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	out, err := runCLI(t, ctx, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("engram %s: %v, want exit status 1; output:\n%s", strings.Join(args, " "), err, out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("engram %s took %s to give up; want a refusal at once", args[0], took)
	}
	if want := "pid " + strconv.Itoa(holderPID); !strings.Contains(out, want) {
		t.Errorf("engram %s output does not name the holder (%q):\n%s", args[0], want, out)
	}
}

func TestSecondWriterOfADataDirIsRefused(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	first := startServer(t, dataDir, nil)
	key := testserver.Register(t, first.BaseURL, dataDir, "owner@example.com")

	refusedAtOnce(t, first.Proc.PID(), "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	refusedAtOnce(t, first.Proc.PID(), "projections", "rebuild", "--data-dir", dataDir)

	// Reading beside the live server stays allowed.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := runCLI(t, ctx, "projections", "status", "--data-dir", dataDir); err != nil || !strings.Contains(out, `"head"`) {
		t.Errorf("projections status beside a live server: %v\n%s", err, out)
	}
	// The refused writers changed nothing: the first server still serves.
	if status, err := call(t, "GET", first.APIURL()+"/auth/status", key, nil, nil); err != nil || status != 200 {
		t.Errorf("first server after the refusals: status %d, %v", status, err)
	}
}

// The kernel drops the lock with its holder, however it ends.
func TestDataDirIsFreeOnceItsOwnerExits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(*testserver.Server)
	}{
		{"SIGTERM", func(s *testserver.Server) {
			if err := s.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}},
		{"SIGKILL", func(s *testserver.Server) { s.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			tc.end(startServer(t, dataDir, nil))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if out, err := runCLI(t, ctx, "projections", "rebuild", "--data-dir", dataDir); err != nil {
				t.Fatalf("rebuild after the server ended: %v\n%s", err, out)
			}
			startServer(t, dataDir, nil)
		})
	}
}

// Whatever the umask, and in a data dir and outbox that already existed
// open to others, everything the server creates is for its user only.
func TestServerFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	defer syscall.Umask(syscall.Umask(0o022)) // the server inherits it
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dataDir, "outbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dataDir, nil)
	key := testserver.Register(t, s.BaseURL, dataDir, "modes@example.com")
	if status, err := call(t, "POST", s.APIURL()+"/memories", key, map[string]any{
		"agent_id": "claire", "type": "notes", "content": map[string]string{"content": "files stay private"},
	}, nil); err != nil || status != 201 {
		t.Fatalf("write a memory: status %d, %v", status, err)
	}

	seen := map[string]bool{}
	err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %o, want %o", path, fi.Mode().Perm(), want)
		}
		rel, _ := filepath.Rel(dataDir, path)
		if filepath.Ext(rel) == ".eml" {
			rel = filepath.Join(filepath.Dir(rel), "*.eml")
		}
		seen[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "outbox", "engram.db", "engram.db-wal", "engram.db-shm", "engram.lock", "outbox/*.eml"} {
		if !seen[want] {
			t.Errorf("%s was not checked (files seen: %v)", want, seen)
		}
	}
}

// --durability and its twin ENGRAM_DURABILITY reach the event log (the
// sqlite tests prove what each setting does there); a value that is
// neither is refused before anything is opened.
func TestDurabilitySettingReachesTheEventLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default", nil, nil, "durability=durable"},
		{"environment", []string{"ENGRAM_DURABILITY=relaxed"}, nil, "durability=relaxed"},
		{"flag over environment", []string{"ENGRAM_DURABILITY=relaxed"}, []string{"--durability", "durable"}, "durability=durable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, t.TempDir(), tc.env, tc.args...)
			if !strings.Contains(s.Log(), `msg="event log opened"`) || !strings.Contains(s.Log(), tc.want) {
				t.Errorf("server log does not say %s:\n%s", tc.want, s.Log())
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dataDir := filepath.Join(t.TempDir(), "never-created")
	out, err := runCLI(t, ctx, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--durability", "sometimes")
	if err == nil || !strings.Contains(out, `--durability: "sometimes"`) {
		t.Errorf("--durability sometimes: %v, output:\n%s", err, out)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused --durability created the data dir (%v)", err)
	}
}
