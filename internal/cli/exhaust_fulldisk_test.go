//go:build linux

package cli

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engram-memory/engram/internal/tmpfstest"
)

// fillingModels is an OpenAI-compatible server on loopback: its
// embeddings are derived from each text's hash, and its chat model
// proposes a belief citing every source it is shown. Its first chat call
// fills the disk before it answers, so the write of the cycle that asked
// finds no space.
type fillingModels struct {
	t      *testing.T
	filler string
	chats  atomic.Int64
}

const fillingModel, fillingDims = "filling-embed-4", 4

var citedSource = regexp.MustCompile(`(?m)^\[([^\]]+)\]`)

func (f *fillingModels) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input    []string                   `json:"input"`
		Model    string                     `json:"model"`
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/embeddings":
		data := make([]map[string]any, len(req.Input))
		for i, text := range req.Input {
			h := fnv.New64a()
			h.Write([]byte(text))
			seed := h.Sum64()
			v := make([]float32, fillingDims)
			for j := range v {
				v[j] = float32(int64(seed>>(8*j))&0xff) - 127.5
			}
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}})
	case "/v1/chat/completions":
		if f.chats.Add(1) == 1 {
			tmpfstest.Fill(f.t, f.filler)
		}
		var cited []string
		for _, m := range citedSource.FindAllStringSubmatch(req.Messages[len(req.Messages)-1].Content, -1) {
			cited = append(cited, m[1])
		}
		src, _ := json.Marshal(cited)
		answer := `[{"content":{"statement":"Deploys need their migrations first","belief_type":"causal"},"confidence":0.8,"source_ids":` + string(src) + `}]`
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}}})
	default:
		http.Error(w, "unexpected request", http.StatusNotFound)
	}
}

// TestCLIExhaustJSONCarriesTheFailedCycle: a local stack whose disk
// fills up during an exhaust run's later cycle prints, with --json, the
// cycles stored before it, converged false, convergence_reason
// cycle_failed and the failing cycle's error object (as the API's
// answer carries it), and exits non-zero. The disk is a small tmpfs the
// stack lives on; the chat model fills it when the first medium cycle
// (the first with episode transitions, after two light cycles with no
// raw entries to process) asks it, so that cycle's writes find no space.
func TestCLIExhaustJSONCarriesTheFailedCycle(t *testing.T) {
	t.Parallel()
	home := tmpfstest.Mount(t, 48<<20)
	srv := httptest.NewServer(&fillingModels{t: t, filler: filepath.Join(home, "filler")})
	t.Cleanup(srv.Close)
	h := &cliHome{t: t, dir: home, env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ENGRAM_HOME=" + home,
		"ENGRAM_EMBED_PROVIDER=openai", "ENGRAM_EMBED_MODEL=" + fillingModel, "ENGRAM_OPENAI_EXTRA_MODELS=" + fillingModel + ":4",
		"ENGRAM_CHAT_MODEL=filling-chat", "OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test"}}
	for _, objective := range []string{"deploy api", "deploy web", "deploy worker"} {
		h.ok("episode", "--objective", objective, "--outcome", "failed: migration missing")
	}

	r := h.fails(1, "", "process", "exhaust", "--json")
	var out struct {
		CyclesCompleted   int    `json:"cycles_completed"`
		Converged         bool   `json:"converged"`
		ConvergenceReason string `json:"convergence_reason"`
		Cycles            []any  `json:"cycles"`
		Error             *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("process exhaust --json printed %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	if out.CyclesCompleted == 0 || len(out.Cycles) != out.CyclesCompleted || out.Converged || out.ConvergenceReason != "cycle_failed" {
		t.Fatalf("process exhaust --json printed %s; want the stored cycles, not converged, reason cycle_failed (stderr %s)", r.stdout, r.stderr)
	}
	// Which write meets the full disk first decides the code: the cycle's
	// append (storage_full: nothing of it stored) or, when the append got
	// in, the read models applying it (write_not_yet_visible: stored, not
	// yet readable). Both say the storage is full.
	if out.Error == nil || out.Error.Code != "storage_full" && out.Error.Code != "write_not_yet_visible" ||
		!strings.Contains(out.Error.Message, "storage is full") {
		t.Fatalf("process exhaust --json printed %s; want the failed cycle's error object, storage_full or write_not_yet_visible (stderr %s)", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, `"code":"`+out.Error.Code+`"`) {
		t.Errorf("stderr %q does not carry the error object the JSON does (%s)", r.stderr, out.Error.Code)
	}
}
