package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/engram-memory/engram/commands"
)

// TestWritesOverTheAppendLimit: over a KurrentDB log whose MaxAppendSize
// (here 16 KiB) is less than a write's events — a batch, a push or an
// import larger than the limit, or one memory when the limit is set lower
// than a memory can be — the write is refused whole with 413
// event_batch_too_large naming the limit, and stores nothing
// (docs/storage-engines.md#kurrentdb).
func TestWritesOverTheAppendLimit(t *testing.T) {
	const limit = 16 << 10
	s := newStack(t, stackOptions{fixedAuth: true, noRun: true, kurrentMaxAppend: limit})
	text := func(i int) string {
		return fmt.Sprintf("note %d: %s", i, strings.Repeat("the team deployed the release to the server. ", 90))
	} // 4 KiB
	var kept string
	for i := range 5 {
		kept = s.create(t, aliceKey, "source", "note", map[string]any{"content": text(i)}).ID
	}
	long := strings.Repeat("a long note. ", 1500) // 19.5 KiB
	_, export := s.exportAgent(t, aliceKey, "source", "")
	var notes []any
	var pushed []commands.SyncEvent
	for i := range 5 {
		notes = append(notes, map[string]any{"type": "note", "content": map[string]any{"content": text(i)}})
		pushed = append(pushed, pushedNote(text(i)))
	}
	for _, c := range []struct {
		name string
		send func(t *testing.T) response
	}{
		{"one memory", func(t *testing.T) response {
			return s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "target", "type": "note",
				"content": map[string]any{"content": long}})
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
			head := s.head(t)
			r := c.send(t)
			wantError(t, r, http.StatusRequestEntityTooLarge, "event_batch_too_large")
			if got, _ := r.details()["limit"].(float64); got != limit || !strings.Contains(r.errorMessage(), "nothing was written") {
				t.Fatalf("the refusal does not name the limit %d and say nothing was written: %s", limit, r.raw)
			}
			if after := s.head(t); after != head {
				t.Fatalf("the log moved from %d to %d", head, after)
			}
		})
	}
}
