package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The index backend flags are checked before anything starts: a bad
// choice or a missing URL is a clear error, and a backend whose adapter
// this binary does not hold yet says so instead of falling back.
func TestIndexBackendFlags(t *testing.T) {
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
		{"qdrant not built", []string{"--vector-index", "qdrant", "--qdrant-url", "http://127.0.0.1:1"}, nil, "not built into this binary yet"},
		{"meilisearch not built", []string{"--keyword-index", "meilisearch", "--meilisearch-url", "http://127.0.0.1:1"}, nil, "not built into this binary yet"},
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
