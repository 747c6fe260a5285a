package cli

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/internal/testserver"
)

// The index backend flags are checked before anything starts: a bad
// choice, a missing URL or one the backend's adapter cannot use is a clear
// error, never a fallback to the embedded indexes.
func TestIndexBackendFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown keyword index", []string{"--keyword-index", "lucene"}, nil, `--keyword-index must be embedded or meilisearch, not "lucene"`},
		{"unknown vector index", []string{"--vector-index", "faiss"}, nil, `--vector-index must be embedded or qdrant, not "faiss"`},
		{"qdrant without url", []string{"--vector-index", "qdrant"}, nil, "--vector-index qdrant needs --qdrant-url"},
		{"meilisearch without url", []string{"--keyword-index", "meilisearch"}, nil, "--keyword-index meilisearch needs --meilisearch-url"},
		{"env twin", nil, []string{"ENGRAM_VECTOR_INDEX=qdrant"}, "--vector-index qdrant needs --qdrant-url"},
		{"qdrant url of another scheme", []string{"--vector-index", "qdrant", "--qdrant-url", "ftp://127.0.0.1:6334"}, nil, "scheme must be http or https"},
		{"meilisearch url of another scheme", []string{"--keyword-index", "meilisearch", "--meilisearch-url", "ftp://127.0.0.1:7700"}, nil, "want http(s)://host[:port]"},
	}
	for _, c := range cases {
		for _, sub := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"projections", "rebuild"}} {
			t.Run(c.name+"/"+sub[0], func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				args := append(append(append([]string{}, sub...), "--data-dir", t.TempDir()), c.args...)
				cmd := exec.CommandContext(ctx, binPath, args...)
				cmd.Env = append(append(cmd.Environ(), "ENGRAM_HOME="+t.TempDir()), c.env...)
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() == 0 {
					t.Fatalf("engram %s: %v, want a failing exit; output:\n%s", strings.Join(args, " "), err, out)
				}
				if !strings.Contains(string(out), c.want) {
					t.Fatalf("output does not say %q:\n%s", c.want, out)
				}
			})
		}
	}
}

// searchResult is the part of a search response these tests read.
type searchResult struct {
	Results []struct {
		ID string `json:"id"`
	} `json:"results"`
	Degraded string `json:"degraded"`
}

func (r searchResult) ids() []string {
	var ids []string
	for _, hit := range r.Results {
		ids = append(ids, hit.ID)
	}
	slices.Sort(ids)
	return ids
}

// waitEmbedded polls the memory until its vector is written.
func waitEmbedded(t *testing.T, base, key, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var m struct {
			Embedding struct{ Status string } `json:"embedding"`
		}
		if _, err := call(t, "GET", base+"/v1/memories/"+id, key, nil, &m); err != nil {
			t.Fatal(err)
		}
		if m.Embedding.Status == "embedded" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory %s not embedded: %+v", id, m.Embedding)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runCLIWith runs the binary in the servers' hermetic environment plus env and
// fails the test unless it succeeds; it returns the combined output.
func runCLIWith(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = append(testserver.Environ(t.TempDir()), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("engram %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitUntil polls cond until it holds, for at most 10s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The scale-out setting, both indexes remote (deploy/compose.yaml): a
// memory written over the API lands in Qdrant and Meilisearch, and hybrid
// search finds it through both without degrading.
func TestServeWithBothRemoteIndexes(t *testing.T) {
	t.Parallel()
	const qdrantKey, meiliKey = "both-qdrant-key", "both-meili-key"
	qsrv := qdranttest.Start(t, qdrantKey)
	msrv := meilitest.New(t, meilitest.Options{APIKey: meiliKey})
	dataDir := t.TempDir()
	p := startServer(t, dataDir, []string{"ENGRAM_QDRANT_API_KEY=" + qdrantKey, "ENGRAM_MEILISEARCH_API_KEY=" + meiliKey},
		"--embed-model", "engram-hash-384", "--vector-index", "qdrant", "--qdrant-url", qsrv.Addr,
		"--keyword-index", "meilisearch", "--meilisearch-url", msrv.URL)
	key := testserver.Register(t, p.BaseURL, dataDir, "both@example.com")
	var created struct {
		ID string `json:"id"`
	}
	if status, err := call(t, "POST", p.BaseURL+"/v1/memories", key, map[string]any{"agent_id": "claire", "type": "note",
		"content": map[string]string{"content": "the quarterly budget review moved to thursday"}}, &created); err != nil || status != 201 {
		t.Fatalf("create: %d %v", status, err)
	}
	waitEmbedded(t, p.BaseURL, key, created.ID)
	if _, ok := msrv.Document(meilisearch.DefaultIndexName, created.ID); !ok || len(qsrv.Collections()) != 1 {
		t.Fatalf("the memory is not in both indexes: meilisearch document %v, qdrant collections %v", ok, qsrv.Collections())
	}
	var res struct {
		Degraded string `json:"degraded"`
		Results  []struct {
			ID      string `json:"id"`
			Explain struct {
				VectorScore  *float64 `json:"vector_score"`
				KeywordScore *float64 `json:"keyword_score"`
			} `json:"explain"`
		} `json:"results"`
	}
	status, err := call(t, "POST", p.BaseURL+"/v1/search", key, map[string]any{"agent_id": "claire", "query": "quarterly budget", "mode": "hybrid", "explain": true}, &res)
	if err != nil || status != 200 || res.Degraded != "" || len(res.Results) != 1 || res.Results[0].ID != created.ID ||
		res.Results[0].Explain.VectorScore == nil || res.Results[0].Explain.KeywordScore == nil {
		t.Fatalf("hybrid search: %d %v %+v, want %s found by both sides", status, err, res, created.ID)
	}
}
