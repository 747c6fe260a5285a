package api_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
)

// BenchmarkProcessingView10k: an agent whose cognition stream holds 10,000
// events (passes and the suggestions they made). "fold" is what loading
// the state cost every processing view, process and decision before
// snapshots: reading the whole stream and folding it. "tail" is what it
// costs now when nothing was appended since the last call: reading the
// stream's (empty) tail. "view" is a whole GET processing call now (the
// snapshot, then the agent's sources the view lists), on the real SQLite
// store.
func BenchmarkProcessingView10k(b *testing.B) {
	s := newStack(b, stackOptions{fixedAuth: true})
	s.raws(b, aliceKey, "claire", goldenRaw...)
	ctx := context.Background()
	agent, ok, err := s.memories.Agent(ctx, alice, "claire")
	if err != nil || !ok {
		b.Fatal(err)
	}
	ref := processing.AgentRef{UserID: alice, AgentID: "claire", AgentCreatedAt: agent.CreatedAt}
	stream := processing.Stream(alice, "claire")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-alice", UserID: alice}}
	const total, batch = 10000, 500
	for start := 0; start < total; start += batch {
		payloads := make([]domain.Payload, batch)
		for i := range payloads {
			n := strconv.Itoa(start + i)
			payloads[i] = processing.PassRecorded{AgentRef: ref, Pass: processing.Pass{PassID: n, Transition: processing.RawToNote, At: at,
				Consumed: []processing.Consumed{{ID: n, Into: []string{"suggestion:" + n}}}}}
			if i%2 == 1 {
				payloads[i] = processing.SuggestionCreated{AgentRef: ref, SuggestionID: n, Sources: []string{"raw_entry:" + n},
					Content: json.RawMessage(`{"content":"a note of some length"}`), CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
			}
		}
		if _, err := s.writer.Append(ctx, stream, int64(start)-1, meta, payloads...); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("fold", func(b *testing.B) {
		for b.Loop() {
			events, err := s.store.ReadStream(ctx, stream, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := processing.Fold(events, agent.CreatedAt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tail", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.store.ReadStream(ctx, stream, total); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("view", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.queries.Processing(ctx, alice, "claire"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
