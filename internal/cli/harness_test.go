package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// cliHome is a private ENGRAM_HOME in which tests run the built binary as a
// user would. Its environment is built from nothing, so the developer's
// ENGRAM_* and OPENAI_* variables never leak in.
type cliHome struct {
	t   *testing.T
	dir string
	env []string
}

func newCLIHome(t *testing.T, extraEnv ...string) *cliHome {
	t.Helper()
	dir := t.TempDir()
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ENGRAM_HOME=" + dir}, extraEnv...)
	return &cliHome{t: t, dir: dir, env: env}
}

// in returns h reporting to t (a subtest).
func (h *cliHome) in(t *testing.T) *cliHome {
	cp := *h
	cp.t = t
	return &cp
}

// cliResult is what one run printed and its exit code.
type cliResult struct {
	stdout, stderr string
	code           int
}

// run runs the binary with args and stdin.
func (h *cliHome) run(stdin string, args ...string) cliResult {
	h.t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = h.env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		h.t.Fatalf("engram %v did not finish", args)
	}
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		h.t.Fatal(err)
	}
	return res
}

// ok runs args and fails the test unless the exit code is 0.
func (h *cliHome) ok(args ...string) cliResult {
	h.t.Helper()
	r := h.run("", args...)
	if r.code != 0 {
		h.t.Fatalf("engram %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// fails runs args with stdin and fails the test unless the exit code is code.
func (h *cliHome) fails(code int, stdin string, args ...string) cliResult {
	h.t.Helper()
	r := h.run(stdin, args...)
	if r.code != code {
		h.t.Fatalf("engram %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// json runs args with --json and decodes stdout into out.
func (h *cliHome) json(out any, args ...string) {
	h.t.Helper()
	r := h.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(r.stdout), out); err != nil {
		h.t.Fatalf("engram %s --json: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
}

// object decodes stdout of a --json run into a generic object.
func (h *cliHome) object(args ...string) map[string]any {
	h.t.Helper()
	var out map[string]any
	h.json(&out, args...)
	return out
}

// keysOf lists an object's keys in order, for shape checks.
func keysOf(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not a JSON object", v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// assertShape checks that v is an object with exactly these keys.
func assertShape(t *testing.T, what string, v any, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keysOf(t, v); !slices.Equal(got, want) {
		t.Fatalf("%s keys = %v, want %v", what, got, want)
	}
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func jsonUnmarshal(s string, out any) error { return json.Unmarshal([]byte(s), out) }
