package client_test

import (
	"testing"
	"time"

	"github.com/engram-memory/engram/client"
)

func TestEmbeddings(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)

	cat, err := f.c.Models(ctx)
	noErr(t, err)
	if cat.DefaultModel == "" || len(cat.Models) == 0 {
		t.Fatalf("models: %+v", cat)
	}

	one, err := f.c.GenerateEmbedding(ctx, "hello world", "")
	noErr(t, err)
	if one.Model != cat.DefaultModel || one.Dimensions <= 0 || len(one.Embedding) != one.Dimensions || one.TokensUsed <= 0 {
		t.Fatalf("generate: model %s dims %d len %d tokens %d", one.Model, one.Dimensions, len(one.Embedding), one.TokensUsed)
	}
	batch, err := f.c.GenerateEmbeddings(ctx, []string{"hello world", "something else"}, client.DefaultModel)
	noErr(t, err)
	if len(batch.Embeddings) != 2 || len(batch.Embeddings[0]) != one.Dimensions {
		t.Fatalf("batch: %d vectors", len(batch.Embeddings))
	}
	for i, x := range batch.Embeddings[0] {
		if x != one.Embedding[i] {
			t.Fatal("batch vector 0 differs from the single one")
		}
	}
	if _, err := f.c.GenerateEmbedding(ctx, "x", "no-such-model"); !client.IsCode(err, "model_not_available") {
		t.Fatalf("unknown model: %v", err)
	}

	m, err := f.c.CreateMemory(ctx, client.CreateMemoryRequest{AgentID: "claire", Type: "notes", Content: client.NoteContent{Content: "hello world"}})
	noErr(t, err)
	sim, err := f.c.Similar(ctx, client.SimilarRequest{AgentID: "claire", Embedding: one.Embedding, Limit: 5})
	noErr(t, err)
	if len(sim) == 0 || sim[0].ID != m.ID || sim[0].Score < 0.99 {
		t.Fatalf("similar: %+v", sim)
	}

	re, err := f.c.Reembed(ctx, "claire", "note", m.ID)
	noErr(t, err)
	if re.MemoryID != m.ID || re.NewModel == "" || re.ReembeddedAt.IsZero() {
		t.Fatalf("reembed: %+v", re)
	}

	job, err := f.c.BulkReembed(ctx, client.BulkReembedRequest{AgentID: "claire"})
	noErr(t, err)
	if job.JobID == "" || job.Status != "queued" {
		t.Fatalf("bulk: %+v", job)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := f.c.GetJob(ctx, job.JobID)
		noErr(t, err)
		if j.Done() {
			if j.Status != "completed" || j.CompletedAt == nil || j.MemoriesProcessed > j.MemoriesTotal {
				t.Fatalf("job ended: %+v", j)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s after 30s", j.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := f.c.GetJob(ctx, "no-such-job"); !client.IsCode(err, "not_found") {
		t.Fatalf("unknown job: %v", err)
	}

	oa, err := f.c.OpenAIEmbeddings(ctx, client.OpenAIEmbeddingRequest{Input: []string{"hello world"}, Model: cat.DefaultModel})
	noErr(t, err)
	if oa.Object != "list" || len(oa.Data) != 1 || oa.Model != cat.DefaultModel {
		t.Fatalf("openai: %+v", oa)
	}
}
