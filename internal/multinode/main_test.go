// Package multinode_test runs several real `engram serve` processes over one
// PostgreSQL event log, each with its own data dir (read models and
// in-process indexes), and checks what a deployment of several nodes
// relies on: read-your-writes with the consistency token, revocation and
// rate limits across nodes, re-embedding jobs surviving their node, and
// per-node read models equal to a fresh rebuild after a node was killed
// mid-load.
package multinode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/pgtest"
	"github.com/engram-memory/engram/internal/testserver"
)

var (
	// binPath is the engram binary of the tests (testserver.Binary); benchBinPath a build
	// without the race detector, made only when benchmarks run; pg the
	// PostgreSQL server.
	binPath      string
	benchBinPath string
	pg           *pgtest.Server
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	var err error
	if binPath, err = testserver.Binary(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "build engram:", err)
		return 1
	}
	// Built here, before the environment is isolated: under the isolated
	// HOME, go build would start from an empty module and build cache.
	flag.Parse()
	if bench := flag.Lookup("test.bench"); bench != nil && bench.Value.String() != "" {
		dir, err := os.MkdirTemp("", "engram-bench-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if benchBinPath, err = testserver.Build(context.Background(), dir, false); err != nil {
			fmt.Fprintln(os.Stderr, "build engram:", err)
			return 1
		}
	}
	if pg, err = pgtest.Open(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pg.Close()
	home, err := os.MkdirTemp("", "engram-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(home)
	if err := testserver.IsolateProcessEnv(home); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// cluster is n nodes over one fresh PostgreSQL database.
type cluster struct {
	t     testing.TB
	bin   string
	dbURL string
	args  []string
	nodes []*testserver.Server
}

// startCluster starts n nodes with the given extra serve flags. The log's
// URL reaches them in ENGRAM_EVENT_STORE_URL, as a deployment passes it.
func startCluster(t testing.TB, n int, args ...string) *cluster {
	t.Helper()
	return startClusterOf(t, binPath, n, args...)
}

// startClusterOf is startCluster running the binary bin.
func startClusterOf(t testing.TB, bin string, n int, args ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: bin, dbURL: pg.Database(t), args: args}
	c.nodes = make([]*testserver.Server, n)
	c.nodes[0] = c.start(t.TempDir()) // the first applies the migrations
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		dir := t.TempDir()
		go func() { defer wg.Done(); c.nodes[i] = c.start(dir) }()
	}
	wg.Wait()
	for _, n := range c.nodes {
		if n == nil {
			t.FailNow()
		}
	}
	return c
}

func (c *cluster) env() []string { return []string{"ENGRAM_EVENT_STORE_URL=" + c.dbURL} }

// start runs one node over dataDir (an existing one: a restart).
func (c *cluster) start(dataDir string) *testserver.Server {
	return testserver.Start(c.t, testserver.Options{
		Binary: c.bin, DataDir: dataDir, Env: c.env(),
		Args: append([]string{"--event-store", "postgres"}, c.args...),
	})
}

// reply is one decoded API response.
type reply struct {
	status int
	header http.Header
	body   map[string]any
}

func (r reply) data() map[string]any {
	d, _ := r.body["data"].(map[string]any)
	return d
}

func (r reply) code() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// call sends a JSON request to node with bearer and extra headers
// (name, value pairs).
func call(t testing.TB, node *testserver.Server, method, path, bearer string, body any, headers ...string) reply {
	t.Helper()
	r, err := tryCall(node, method, path, bearer, body, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tryCall(node *testserver.Server, method, path, bearer string, body any, headers ...string) (reply, error) {
	return tryCallWith(http.DefaultClient, node, method, path, bearer, body, headers...)
}

// tryCallWith is tryCall through client.
func tryCallWith(client *http.Client, node *testserver.Server, method, path, bearer string, body any, headers ...string) (reply, error) {
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return reply{}, err
		}
		reader = bytes.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, node.APIURL()+path, reader)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return reply{}, err
	}
	r := reply{status: res.StatusCode, header: res.Header}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		return reply{}, fmt.Errorf("%s %s: not JSON (%d): %s", method, path, res.StatusCode, raw)
	}
	return r, nil
}

// must fails t unless r has status.
func must(t testing.TB, r reply, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %v", r.status, status, r.body)
	}
	return r
}

// writeLoad has every node take note writes, one writer per node (agent
// load-W), until the returned stop is called; it counts the 201s and
// keeps the slowest answer; stop may be called again. A write to victim that fails ends its writer
// quietly (the test kills that node); any other failure fails the test.
func writeLoad(t *testing.T, nodes []*testserver.Server, key string, victim *testserver.Server) (*load, func()) {
	l := &load{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				start := time.Now()
				r, err := tryCall(n, "POST", "/memories", key, map[string]any{"agent_id": fmt.Sprintf("load-%d", w), "type": "note", "content": map[string]any{"content": fmt.Sprintf("load note %d of writer %d", i, w)}})
				if err != nil {
					if n != victim {
						t.Error(err)
					}
					return
				}
				if r.status == http.StatusCreated {
					l.written.Add(1)
				}
				took := int64(time.Since(start))
				for old := l.slowest.Load(); took > old && !l.slowest.CompareAndSwap(old, took); old = l.slowest.Load() {
				}
			}
		}()
	}
	var once sync.Once
	return l, func() { once.Do(func() { close(done) }); wg.Wait() }
}

// load is what writeLoad measured.
type load struct {
	written atomic.Int64
	// slowest is the longest a write took to answer, in nanoseconds.
	slowest atomic.Int64
}
