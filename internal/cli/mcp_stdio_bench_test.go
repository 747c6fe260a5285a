package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/testserver"
)

// BenchmarkMCPStdio measures `engram mcp -s bench` (a binary built without
// the race detector) on a local stack of 10,000 notes, as an MCP client
// runs it over stdio with the SDK's Go client:
//
//   - start-to-first-answer: from starting the process to the answer of
//     its first search_memories call (process start, initialize handshake,
//     the stack opened for the call, the search);
//   - search-round-trip: one search_memories call on a running server.
//
// Each reports p50 and p99 in ms.
func BenchmarkMCPStdio(b *testing.B) {
	ctx := context.Background()
	bin, err := testserver.Build(ctx, b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	queries := fillBenchStack(b, home, 10_000)
	start := func() *sdk.ClientSession {
		cmd := exec.Command(bin, "mcp", "-s", "bench", "--local")
		cmd.Env = testserver.Environ(home)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	search := func(cs *sdk.ClientSession, query string) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_memories", Arguments: map[string]any{"agent_id": "bench", "query": query, "limit": 10}})
		if err != nil || res.IsError {
			b.Fatalf("search_memories %q: %v %v", query, err, res)
		}
	}

	b.Run("start-to-first-answer", func(b *testing.B) {
		var took []time.Duration
		for i := 0; b.Loop(); i++ {
			began := time.Now()
			cs := start()
			search(cs, queries[i%len(queries)])
			took = append(took, time.Since(began))
			_ = cs.Close()
		}
		reportPercentiles(b, took)
	})
	b.Run("search-round-trip", func(b *testing.B) {
		cs := start()
		defer cs.Close()
		search(cs, queries[0]) // the first call warms the page cache
		var took []time.Duration
		for i := 0; b.Loop(); i++ {
			began := time.Now()
			search(cs, queries[i%len(queries)])
			took = append(took, time.Since(began))
		}
		reportPercentiles(b, took)
	})
}

func reportPercentiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// fillBenchStack creates the local stack "bench" under home with n notes
// of random words (fillWithNotes) and returns queries over the same words.
func fillBenchStack(b *testing.B, home string, n int) []string {
	b.Helper()
	c := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, home: home, stack: "bench"}
	st, err := c.openStack(context.Background(), true, writeParts)
	if err != nil {
		b.Fatal(err)
	}
	defer st.close()
	return fillWithNotes(b, st, n)
}

// fillWithNotes adds n notes of twelve random words to the open stack st,
// the same on every run, and returns 64 queries of three of those words.
func fillWithNotes(b *testing.B, st *localStack, n int) []string {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("deploy cache login latency backup friday review python rollback alert database team release train changelog incident postgres kafka dashboard metrics oncall pager budget roadmap hiring design api schema migration index")
	sentence := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(out, " ")
	}
	for done := 0; done < n; done += memory.MaxBatch {
		batch := make([]commands.MemoryInput, min(memory.MaxBatch, n-done))
		for i := range batch {
			content, _ := json.Marshal(map[string]string{"content": fmt.Sprintf("%s %d", sentence(12), done+i)})
			batch[i] = commands.MemoryInput{Type: "note", Content: content}
		}
		if _, err := st.app.Memories.CreateBatch(ctx, st.meta(), st.name, batch); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = sentence(3)
	}
	return queries
}
