package multinode_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/internal/testserver"
)

// TestRateLimitIsSharedByThreeNodes: one credential's requests spread over
// three nodes get the burst once, not three times.
func TestRateLimitIsSharedByThreeNodes(t *testing.T) {
	const burst = 10
	c := startCluster(t, 3, "--rate-limit", "0.01", "--rate-burst", fmt.Sprint(burst))
	key := testserver.Register(t, c.nodes[0].BaseURL, c.nodes[0].DataDir, "rita@example.com")
	allowed, limited := 0, 0
	for i := range 3 * burst {
		r := call(t, c.nodes[i%3], "GET", "/memories?agent_id=a1", key, nil)
		switch r.status {
		case http.StatusOK:
			allowed++
		case http.StatusTooManyRequests:
			limited++
			if r.header.Get("Retry-After") == "" || r.code() != "rate_limited" {
				t.Fatalf("429 without Retry-After or code rate_limited: %v %v", r.header, r.body)
			}
		default:
			t.Fatalf("status %d: %v", r.status, r.body)
		}
	}
	if allowed != burst || limited != 2*burst {
		t.Fatalf("%d allowed and %d limited over three nodes, want the one burst %d allowed", allowed, limited, burst)
	}
}

// TestReembedJobSurvivesItsNode kills the node that holds a bulk
// re-embedding job mid-job: another node takes it over once the lease
// expires, and in the end every memory was embedded by the job exactly
// once and the job completed once.
func TestReembedJobSurvivesItsNode(t *testing.T) {
	const memories = 120
	c := startCluster(t, 3, "--job-lease-timeout", "2s", "--job-batch-size", "10", "--job-batch-delay", "150ms")
	one := c.nodes[0]
	key := testserver.Register(t, one.BaseURL, one.DataDir, "jo@example.com")
	for start := 0; start < memories; start += 40 {
		var items []any
		for i := start; i < start+40; i++ {
			items = append(items, map[string]any{"type": "note", "content": map[string]any{"content": fmt.Sprintf("fact number %d about the release", i)}})
		}
		must(t, call(t, one, "POST", "/memories/batch", key, map[string]any{"agent_id": "j1", "memories": items}), http.StatusCreated)
	}
	queued := must(t, call(t, one, "POST", "/embeddings/bulk-reembed", key, map[string]any{"agent_id": "j1"}), http.StatusAccepted)
	jobID, _ := queued.data()["job_id"].(string)
	token := queued.header.Get("Engram-Consistency-Token")

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var holder string
	waitUntil(t, "a node claims the job", func() bool {
		err := conn.QueryRow(ctx, `SELECT convert_from(payload, 'UTF8')::jsonb->>'runner_id' FROM events WHERE stream = $1 AND type = $2`, job.Stream(jobID), job.TypeStarted).Scan(&holder)
		return err == nil
	})
	var victim *testserver.Server
	var survivor *testserver.Server
	for _, n := range c.nodes {
		if strings.HasSuffix(holder, "/"+strings.TrimPrefix(n.BaseURL, "http://")) {
			victim = n
		} else {
			survivor = n
		}
	}
	if victim == nil {
		t.Fatalf("no node is the job's holder %q", holder)
	}
	waitUntil(t, "the job is under way", func() bool {
		v := call(t, survivor, "GET", "/embeddings/jobs/"+jobID, key, nil, "Engram-Consistency-Token", token)
		return num(v.data()["memories_processed"]) >= 30
	})
	victim.Kill()

	deadline := time.Now().Add(60 * time.Second)
	var final reply
	for {
		final = call(t, survivor, "GET", "/embeddings/jobs/"+jobID, key, nil)
		if final.data()["status"] == "completed" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if final.data()["status"] != "completed" || num(final.data()["memories_processed"]) != memories {
		t.Fatalf("job after its node died: %v", final.data())
	}

	var embedded, distinct, completed, takeovers int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT convert_from(payload, 'UTF8')::jsonb->>'memory_id') FROM events
		WHERE type = 'MemoryEmbedded' AND convert_from(payload, 'UTF8')::jsonb->>'job_id' = $1`, jobID).Scan(&embedded, &distinct); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE type = $2), count(*) FILTER (WHERE type = $3 AND convert_from(payload, 'UTF8')::jsonb->>'runner_id' <> $4)
		FROM events WHERE stream = $1`, job.Stream(jobID), job.TypeCompleted, job.TypeResumed, holder).Scan(&completed, &takeovers); err != nil {
		t.Fatal(err)
	}
	if embedded != memories || distinct != memories {
		t.Fatalf("the job recorded %d vectors for %d distinct memories, want each of the %d exactly once", embedded, distinct, memories)
	}
	if completed != 1 || takeovers < 1 {
		t.Fatalf("%d completions and %d takeovers by another node, want 1 and at least 1", completed, takeovers)
	}
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}
