package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the engram binary built once for the end-to-end tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "engram-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "engram")
	build := exec.Command("go", "build", "-race", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build engram:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serverProc is one running `engram serve`.
type serverProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	BaseURL string // http://127.0.0.1:PORT
	logMu   sync.Mutex
	log     strings.Builder
	exited  chan error
}

var servingAddr = regexp.MustCompile(`msg="engram serving" addr=(\S+)`)

// startServer runs the binary on a random loopback port over dataDir.
func startServer(t *testing.T, dataDir string, env []string, args ...string) *serverProc {
	t.Helper()
	full := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}, args...)
	cmd := exec.Command(binPath, full...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProc{t: t, cmd: cmd, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.logMu.Lock()
			p.log.WriteString(line + "\n")
			p.logMu.Unlock()
			if m := servingAddr.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case a := <-addr:
		p.BaseURL = "http://" + a
	case err := <-p.exited:
		t.Fatalf("engram serve exited before serving: %v\n%s", err, p.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("engram serve did not start\n%s", p.Log())
	}
	p.waitReady()
	return p
}

func (p *serverProc) waitReady() {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.BaseURL + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("server never became ready\n%s", p.Log())
}

// Log is everything the server wrote to stderr so far.
func (p *serverProc) Log() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// Kill ends the server with SIGKILL: no shutdown code runs.
func (p *serverProc) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM and returns the exit error.
func (p *serverProc) Stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		return err
	case <-time.After(30 * time.Second):
		p.t.Fatalf("server did not stop on SIGTERM\n%s", p.Log())
		return nil
	}
}

// runCLI runs the binary with args and returns its combined output.
func runCLI(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(ctx, binPath, args...).CombinedOutput()
	return string(out), err
}
