package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// writesOverTheAppendLimit checks, on s over a KurrentDB log whose
// MaxAppendSize is limit (at most 32 KiB), that each write which is one
// append by promise and holds more than the limit — one memory (when the
// limit is set lower than a memory can be), a patch, a batch, a sync push,
// an import — is refused whole with 413 event_batch_too_large naming the
// limit, and stores nothing (docs/storage-engines.md#kurrentdb).
func writesOverTheAppendLimit(t *testing.T, s *stack, limit int) {
	// 8,000 bytes of text in 6,400 characters: five are over 32 KiB, one
	// alone is not. A text field holds at most 32,000 characters, so a
	// memory over the limit has two-byte ones: 35,000 bytes in 28,000.
	text := func(i int) string { return fmt.Sprintf("note %d: %s", i, strings.Repeat("déjà vu ", 800)) }
	long := strings.Repeat("déjà vu ", 3500)
	var kept string
	for i := range 5 {
		kept = s.create(t, aliceKey, "source", "note", map[string]any{"content": text(i)}).ID
	}
	_, export := s.exportAgent(t, aliceKey, "source", "")
	var notes []any
	var pushed []commands.SyncEvent
	for i := range 5 {
		notes = append(notes, map[string]any{"type": "note", "content": map[string]any{"content": text(i)}})
		pushed = append(pushed, pushedNote(text(i)))
	}
	// written is how many events the streams these writes go to hold
	// (the log's head is dear to find on KurrentDB).
	written := func(t *testing.T) [3]int {
		var n [3]int
		for i, stream := range []string{memory.AgentStream(alice, "source"), memory.AgentStream(alice, "target"), processing.Stream(alice, "target")} {
			events, err := s.store.ReadStream(t.Context(), stream, 0)
			if err != nil {
				t.Fatal(err)
			}
			n[i] = len(events)
		}
		return n
	}
	for _, c := range []struct {
		name string
		send func(t *testing.T) response
	}{
		{"one memory", func(t *testing.T) response {
			return s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "target", "type": "note", "content": map[string]any{"content": long}})
		}},
		{"a patch", func(t *testing.T) response {
			return s.request(t, "PATCH", "/v1/memories/"+kept, aliceKey, map[string]any{"content": map[string]any{"content": long}})
		}},
		{"a batch", func(t *testing.T) response {
			return s.request(t, "POST", "/v1/memories/batch", aliceKey, map[string]any{"agent_id": "target", "memories": notes})
		}},
		{"a sync push", func(t *testing.T) response {
			return s.request(t, "POST", "/v1/sync/events", aliceKey, map[string]any{"agent_id": "target", "events": pushed})
		}},
		{"an import", func(t *testing.T) response { return s.importAgent(t, aliceKey, "target", export) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := written(t)
			r := c.send(t)
			wantError(t, r, http.StatusRequestEntityTooLarge, "event_batch_too_large")
			if got, _ := r.details()["limit"].(float64); int(got) != limit || !strings.Contains(r.errorMessage(), "nothing was written") {
				t.Fatalf("the refusal does not name the limit %d and say nothing was written: %s", limit, r.raw)
			}
			if after := written(t); after != before {
				t.Fatalf("the streams the write goes to held %v events, now %v", before, after)
			}
		})
	}
}
