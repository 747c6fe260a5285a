package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// An agent keeps the model it was created with when the server's default
// changes: a server started with engram-hash-384 as default, restarted on
// the built-in default (glove-sif-100), still embeds and searches that
// agent's memories with engram-hash-384, and binds only new agents to the
// new default.
func TestDefaultModelChangeKeepsAgentsModel(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startServer(t, dataDir, nil, "--embed-model", "engram-hash-384")
	key := testserver.Register(t, p.BaseURL, dataDir, "models@example.com")
	create := func(base, agent, text string) string {
		t.Helper()
		var created struct {
			ID string `json:"id"`
		}
		status, err := call(t, "POST", base+"/v1/memories", key, map[string]any{"agent_id": agent, "type": "note",
			"content": map[string]string{"content": text}, "tags": []string{"Caroline"}}, &created)
		if err != nil || status != 201 {
			t.Fatalf("create: %d %v", status, err)
		}
		return created.ID
	}
	// embedded waits for the memory's vector and returns its model.
	embedded := func(base, id string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var m struct {
				Embedding struct {
					Status, Model string
					Dimensions    int
				} `json:"embedding"`
			}
			if _, err := call(t, "GET", base+"/v1/memories/"+id, key, nil, &m); err != nil {
				t.Fatal(err)
			}
			if m.Embedding.Status == "embedded" {
				return m.Embedding.Model
			}
			if time.Now().After(deadline) {
				t.Fatalf("memory %s not embedded: %+v", id, m.Embedding)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	old := create(p.BaseURL, "old", "we adopted a puppy last spring")
	if got := embedded(p.BaseURL, old); got != "engram-hash-384" {
		t.Fatalf("first server embedded with %s", got)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	q := startServer(t, dataDir, nil)
	added := create(q.BaseURL, "old", "the puppy learned to sit")
	if got := embedded(q.BaseURL, added); got != "engram-hash-384" {
		t.Fatalf("the old agent's new memory was embedded with %s, want its model engram-hash-384", got)
	}
	fresh := create(q.BaseURL, "new", "we adopted a puppy last spring")
	if got := embedded(q.BaseURL, fresh); got != "glove-sif-100" {
		t.Fatalf("a new agent's memory was embedded with %s, want the new default glove-sif-100", got)
	}
	var agents struct {
		Agents []struct {
			AgentID        string `json:"agent_id"`
			EmbeddingModel string `json:"embedding_model"`
			Dimensions     int    `json:"dimensions"`
		} `json:"agents"`
	}
	if _, err := call(t, "GET", q.BaseURL+"/v1/agents", key, nil, &agents); err != nil {
		t.Fatal(err)
	}
	models := map[string]string{}
	for _, a := range agents.Agents {
		models[a.AgentID] = a.EmbeddingModel
	}
	if models["old"] != "engram-hash-384" || models["new"] != "glove-sif-100" {
		t.Fatalf("agents' models %v", models)
	}
	for _, agent := range []string{"old", "new"} {
		var res struct {
			Results []struct {
				ID string `json:"id"`
			} `json:"results"`
			Degraded string `json:"degraded"`
		}
		status, err := call(t, "POST", q.BaseURL+"/v1/search", key, map[string]any{"agent_id": agent, "query": "puppy", "mode": "vector"}, &res)
		if err != nil || status != 200 || len(res.Results) == 0 || res.Degraded != "" {
			t.Fatalf("%s: vector search %d %v %+v", agent, status, err, res)
		}
	}
}

// engram models import-glove converts the npm package's JSON into a model
// directory that serve's --embed-model-dir loads; bad arguments are usage
// errors.
func TestModelsImportGloVeCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "wink.json")
	if err := os.WriteFile(src, []byte(`{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"words":["the",",","puppy"],`+
		`"vectors":{"the":[1,0,1,0],",":[0,1,1,1],"puppy":[0.5,0.5,0.7,2]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tiny")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"models", "import-glove", "--from", src, "--out", out, "--name", "tiny-sif"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "tiny-sif, 2 words × 2 dimensions") {
		t.Errorf("output %q", stdout.String())
	}
	for _, args := range [][]string{{"models"}, {"models", "import-glove", "--out", out}, {"models", "import-glove", "--from", src}, {"models", "import-glove", "--from", src, "--out", out, "--words", "0"}} {
		stderr.Reset()
		if err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); exitCode(err) != 2 || !strings.Contains(stderr.String(), "import-glove") {
			t.Errorf("%v: err %v, stderr %q", args, err, stderr.String())
		}
	}
	if err := run(context.Background(), []string{"models", "import-glove", "--from", filepath.Join(dir, "missing.json"), "--out", out}, strings.NewReader(""), &stdout, &stderr); err == nil || exitCode(err) != 1 {
		t.Errorf("missing source: %v", err)
	}
	// The server loads it.
	p := startServer(t, t.TempDir(), nil, "--embed-model-dir", out, "--embed-model", "tiny-sif")
	var models struct {
		DefaultModel string `json:"default_model"`
	}
	key := testserver.Register(t, p.BaseURL, p.DataDir, "tiny@example.com")
	if _, err := call(t, "GET", p.BaseURL+"/v1/embeddings/models", key, nil, &models); err != nil || models.DefaultModel != "tiny-sif" {
		t.Fatalf("models: %+v %v", models, err)
	}
}
