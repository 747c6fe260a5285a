// Package pgtest gives a package's tests a real PostgreSQL server: the one
// ENGRAM_TEST_POSTGRES_URL names, or else a throwaway cluster it starts
// itself (initdb into a temp dir, pg_ctl start on a free loopback port, no
// fsync) and stops when the tests end. Without initdb the tests skip and
// say why, unless ENGRAM_REQUIRE_POSTGRES=1 (set by .ci/run), which turns
// the missing server into a failure.
//
// Use it from TestMain:
//
//	pg, err := pgtest.Open(ctx)   // before m.Run
//	defer pg.Close()
//	url := pg.URL(t)              // in a test: the URL, or skip
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The environment variables pgtest reads.
const (
	URLEnv     = "ENGRAM_TEST_POSTGRES_URL" // use this server instead of starting one
	RequireEnv = "ENGRAM_REQUIRE_POSTGRES"  // "1": no server is a failure, not a skip
	BinEnv     = "ENGRAM_TEST_POSTGRES_BIN" // directory of initdb and pg_ctl
)

// Server is the PostgreSQL of one test binary.
type Server struct {
	url     string
	skip    string   // why there is no server, when url is ""
	cluster *cluster // the cluster Open started, if it started one
	// databases numbers the databases Database creates.
	databases atomic.Int64
}

// Open finds or starts the server. It fails when a server should be there
// and is not: initdb exists but the cluster does not start, or RequireEnv
// is set and there is no initdb. Close stops what Open started.
func Open(ctx context.Context) (*Server, error) {
	if url := os.Getenv(URLEnv); url != "" {
		return &Server{url: url}, nil
	}
	bin, err := findBin()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			return nil, fmt.Errorf("pgtest: %s=1 but no PostgreSQL to test against: %w", RequireEnv, err)
		}
		return &Server{skip: fmt.Sprintf("no PostgreSQL: %v; install PostgreSQL (Debian: postgresql-15) or set %s", err, URLEnv)}, nil
	}
	c, err := startCluster(ctx, bin)
	if err != nil {
		return nil, err
	}
	return &Server{url: c.url, cluster: c}, nil
}

// URL is the server's connection URL. Without a server it skips the test,
// saying why.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	if s.url == "" {
		t.Skip("SKIP: " + s.skip)
	}
	return s.url
}

// Database creates a fresh, empty database on the server for one test and
// returns its URL; it is dropped (with any connection still open to it)
// when the test ends. Without a server it skips the test, as URL does.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	base := s.URL(t)
	name := fmt.Sprintf("engram_t_%d_%d", os.Getpid(), s.databases.Add(1))
	if err := adminExec(base, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := adminExec(base, `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL: %v", URLEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

func adminExec(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// Main is a TestMain body for a package whose tests share one server:
// it opens one into *srv, runs the tests and closes it, returning the
// exit code (`func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }`).
func Main(m *testing.M, srv **Server) int {
	var err error
	if *srv, err = Open(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := (*srv).Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	return m.Run()
}

// Close stops and removes the cluster Open started, if any.
func (s *Server) Close() error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.stop()
}

// findBin is the directory holding initdb and pg_ctl: BinEnv, the newest
// /usr/lib/postgresql/*/bin (Debian keeps them off PATH), or PATH.
func findBin() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		return dir, checkBin(dir)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if checkBin(dir) == nil {
			return dir, nil
		}
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("initdb is not in PATH nor in /usr/lib/postgresql/*/bin")
	}
	dir := filepath.Dir(initdb)
	return dir, checkBin(dir)
}

func checkBin(dir string) error {
	for _, name := range []string{"initdb", "pg_ctl"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Mode()&0o111 == 0 {
			return fmt.Errorf("no executable %s in %s", name, dir)
		}
	}
	return nil
}

// versionOf is the major version in /usr/lib/postgresql/<version>/bin.
func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// cluster is a throwaway PostgreSQL cluster in a temp dir.
type cluster struct {
	bin, dir, url string
	cred          *syscall.Credential // the postgres user, when we are root
	// watchdog stops the cluster and removes dir once the test process
	// is gone, however it ended; its stdin is the read end of a pipe
	// whose only write end is held here (alive).
	watchdog *exec.Cmd
	alive    *os.File
}

// startCluster runs initdb and pg_ctl start. PostgreSQL refuses to run as
// root, so as root both run as the postgres user, which owns the dir.
func startCluster(ctx context.Context, bin string) (*cluster, error) {
	dir, err := os.MkdirTemp("", "engram-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c := &cluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		if c.cred, err = postgresUser(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	if err := c.run(ctx, "initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A free port can be taken between our probe and the server's bind:
	// try a few.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, dir)
		err = c.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "server.log"), "-o", opts, "-w", "-t", "60", "start")
		if err == nil {
			c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
			if err := c.startWatchdog(); err != nil {
				_ = c.stop()
				return nil, err
			}
			return c, nil
		}
		if attempt == 3 {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w\nserver.log:\n%s", err, log)
		}
	}
}

func (c *cluster) stop() error {
	err := c.run(context.Background(), "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
	if rmErr := os.RemoveAll(c.dir); err == nil {
		err = rmErr
	}
	if c.watchdog != nil {
		// The cluster is gone: the watchdog's stop and removal find
		// nothing left to do, and it exits.
		c.alive.Close()
		if wErr := c.watchdog.Wait(); err == nil && wErr != nil {
			err = fmt.Errorf("pgtest: cluster watchdog: %w", wErr)
		}
	}
	return err
}

// watchdogScript waits for the end of its stdin, which comes when the
// test process closes the pipe or dies (kill -9, a go test timeout, a
// crash: the kernel closes its files), then stops the cluster at once and
// removes its directory. pg_ctl start puts the server in a session of its
// own, so without this a test process killed before Close leaves a
// cluster running until someone notices. The watchdog is in a session of
// its own too, and ignores the signals a terminal or go test sends to the
// process group, so that it outlives the test process it watches.
const watchdogScript = `trap '' HUP INT TERM QUIT
cat >/dev/null
"$0" -D "$1/data" -m immediate -w stop >/dev/null 2>&1
rm -rf "$1"`

// startWatchdog starts the cluster's watchdog (as the postgres user when
// we are root, as pg_ctl must run).
func (c *cluster) startWatchdog() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer r.Close() // the child has its own copy
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, filepath.Join(c.bin, "pg_ctl"), c.dir)
	cmd.Stdin = r
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: c.cred}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("pgtest: start the cluster's watchdog: %w", err)
	}
	c.watchdog, c.alive = cmd, w
	return nil
}

// run runs a PostgreSQL program of c.bin, as the postgres user when we
// are root. Its output goes to a file, not a pipe: pg_ctl start leaves the
// server running, and a pipe the server inherited would never close.
func (c *cluster) run(ctx context.Context, name string, args ...string) error {
	out, err := os.CreateTemp(c.dir, name+"-*.log")
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if err := cmd.Run(); err != nil {
		text, _ := os.ReadFile(out.Name())
		return fmt.Errorf("pgtest: %s %s: %w\n%s", name, strings.Join(args, " "), err, text)
	}
	return nil
}

// postgresUser is the credential of the postgres system user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, PostgreSQL needs the postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: uid of postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: gid of postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
