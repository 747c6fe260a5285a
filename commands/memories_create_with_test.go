package commands_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/internal/memenvtest"
)

// CreateWith decides before it embeds: a batch refused whole — every item
// over the memory quota, every item citing a source that does not exist,
// or the other stream's part
// overtaken by another writer — makes no embedding call, and a batch the
// quota partly admits embeds only the items it stores (one call). The
// embeddings come from an OpenAI-compatible server on loopback that
// counts what reaches it.
func TestCreateWithEmbedsOnlyWhatItStores(t *testing.T) {
	counter, provider := memenvtest.NewCountingProvider(t)
	env := memenvtest.New(t)
	ctx, meta := t.Context(), memenvtest.Meta("u1")
	memories := func(quota int) *commands.Memories {
		m, err := commands.NewMemories(commands.MemoriesConfig{Writer: env.Writer, Reader: env.ReadModel, Embedder: provider,
			DefaultModel: memenvtest.CountedModel, Quotas: memory.Quotas{MemoriesPerAgent: quota}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// A note citing a memory that does not exist: refused when decided.
	unfounded := memenvtest.Note("cites a raw entry that was never captured")
	unfounded.DerivedFrom = []string{"raw_entry:0195c7a4-0000-7000-8000-000000000000"}

	for i, c := range []struct {
		name  string
		quota int // memories per agent; 0: none
		items []commands.MemoryInput
		// overtaken: another writer appends to the other stream first.
		overtaken bool
		// stored is how many items are stored; texts how many reach the
		// embedding server (in calls calls).
		stored, texts, calls int
	}{
		{"every item over the quota", 1, []commands.MemoryInput{memenvtest.Note("the harbour lighthouse keeper logs ships"), memenvtest.Note("the ferry leaves at noon")}, false, 0, 0, 0},
		{"every item citing a missing source", 0, []commands.MemoryInput{unfounded, unfounded}, false, 0, 0, 0},
		{"the other part overtaken", 0, []commands.MemoryInput{memenvtest.Note("the tide tables are printed weekly")}, true, 0, 0, 0},
		{"one item of two within the quota", 2, []commands.MemoryInput{memenvtest.Note("the pier was rebuilt in spring"), memenvtest.Note("the gulls nest on the roof")}, false, 1, 1, 1},
		{"every item admitted", 0, []commands.MemoryInput{memenvtest.Note("the market opens at dawn"), memenvtest.Note("the bakery sells rye bread")}, false, 2, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := fmt.Sprintf("agent-%d", i)
			mem := memories(0)
			if _, err := mem.Create(ctx, meta, agent, memenvtest.Note("a first note so the agent holds one memory")); err != nil {
				t.Fatal(err)
			}
			other := processing.Stream("u1", agent)
			view, _, err := env.ReadModel.Agent(ctx, "u1", agent)
			if err != nil {
				t.Fatal(err)
			}
			changed := processing.ConfigChanged{AgentRef: processing.AgentRef{UserID: "u1", AgentID: agent, AgentCreatedAt: view.CreatedAt},
				Config: processing.DefaultConfig(), ChangedAt: time.Now().UTC()}
			if c.overtaken {
				if _, err := env.Writer.Append(ctx, other, domain.ExpectAny, meta, changed); err != nil {
					t.Fatal(err)
				}
			}
			calls, texts := counter.Calls.Load(), counter.Texts.Load()
			var made []commands.MadeMemory
			err = memories(c.quota).CreateWith(ctx, meta, agent, c.items, func(m []commands.MadeMemory) (commands.StreamPart, error) {
				made = m
				return commands.StreamPart{Stream: other, Expected: domain.ExpectNoStream, Payloads: []domain.Payload{changed}}, nil
			})
			if c.overtaken != errors.Is(err, domain.ErrWrongExpectedVersion) || (!c.overtaken && err != nil) {
				t.Fatalf("CreateWith: %v; want it refused as overtaken: %v", err, c.overtaken)
			}
			stored := 0
			for _, m := range made {
				if err == nil && m.Err == nil {
					stored++
				}
			}
			gotCalls, gotTexts := counter.Calls.Load()-calls, counter.Texts.Load()-texts
			if stored != c.stored || gotCalls != int64(c.calls) || gotTexts != int64(c.texts) {
				t.Fatalf("stored %d, embedded %d texts in %d calls; want %d stored, %d texts in %d calls", stored, gotTexts, gotCalls, c.stored, c.texts, c.calls)
			}
		})
	}
}
