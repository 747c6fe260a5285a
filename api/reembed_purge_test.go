package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/memenvtest"
)

// A bulk re-embedding job that goes text by text (the provider refused
// the batch) does not send the text of a memory purged while it embedded
// the texts before it. The provider is an OpenAI-compatible server on
// loopback that records every text it is sent and refuses calls of more
// than one text; its first one-text call purges another of the job's
// memories before it answers.
func TestBulkReembedSendsNoTextOfAMemoryPurgedDuringItsBatch(t *testing.T) {
	t.Parallel()
	counter, provider := memenvtest.NewCountingProvider(t)
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, providers: []domain.EmbeddingProvider{provider}, embeddingModel: memenvtest.CountedModel.Name})
	texts := map[string]string{}
	for i := range 3 {
		text := fmt.Sprintf("the harbour note number %d", i)
		texts[s.create(t, aliceKey, "claire", "note", map[string]any{"content": text}).ID] = text
	}
	s.must(http.StatusAccepted, "POST", "/v1/embeddings/bulk-reembed", aliceKey, map[string]any{"agent_id": "claire", "model": memenvtest.CountedModelB.Name})
	counter.RefuseBatches.Store(true)
	mark := counter.Mark()
	var purgedText string
	counter.BeforeAnswer = func(asked []string) {
		if purgedText != "" {
			return
		}
		for id, text := range texts {
			if slices.Contains(asked, text) {
				continue
			}
			purgedText = text
			if err := s.memCmds.Purge(t.Context(), metaFor(alice), id, nil); err != nil {
				t.Errorf("purge during the job: %v", err)
			}
			return
		}
	}
	s.stepUntilIdle()
	if purgedText == "" {
		t.Fatal("no memory was purged during the job")
	}
	// Each text went once in the refused batch; then one by one, except
	// the one purged meanwhile.
	for _, text := range texts {
		want := 2
		if text == purgedText {
			want = 1
		}
		if n := counter.TimesSince(mark, text); n != want {
			t.Errorf("%q was sent %d times during the job, want %d (purged: %v)", text, n, want, text == purgedText)
		}
	}
}
