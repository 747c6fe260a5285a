package projections

import (
	"encoding/json"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// TestLiveDecodesServeOnlyTheirOwnPosition: a slot serves the decoding of
// the position it holds; once the ring reuses it for another position, the
// older event is parsed from its own payload again.
func TestLiveDecodesServeOnlyTheirOwnPosition(t *testing.T) {
	created := func(pos uint64, id string) domain.Event {
		raw, err := json.Marshal(memory.MemoryCreated{MemoryID: id, Type: memory.Note})
		if err != nil {
			t.Fatal(err)
		}
		return domain.Event{Position: pos, Type: memory.MemoryCreated{}.EventType(), Payload: raw}
	}
	broken := func(pos uint64) domain.Event {
		return domain.Event{Position: pos, Type: memory.MemoryCreated{}.EventType(), Payload: json.RawMessage(`{`)}
	}
	d := newLiveDecodes(2)
	d.attach([]domain.Event{created(1, "one"), created(3, "three")}) // same slot: 3 replaces 1

	for _, c := range []struct {
		name    string
		event   domain.Event
		wantID  string // "" means Decode must fail: its own payload is parsed
		comment string
	}{
		{"held position is shared", broken(3), "three", "the slot holds 3's decoding"},
		{"replaced position parses again", broken(1), "", "the slot no longer holds 1"},
		{"other types pass untouched", domain.Event{Position: 5, Type: "Unrelated", Payload: json.RawMessage(`{`)}, "", "not a shared payload type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			events := []domain.Event{c.event}
			d.attach(events)
			var got memory.MemoryCreated
			err := events[0].Decode(&got)
			switch {
			case c.wantID == "" && err == nil:
				t.Fatalf("decoded %+v from a broken payload (%s)", got, c.comment)
			case c.wantID != "" && (err != nil || got.MemoryID != c.wantID):
				t.Fatalf("got %q, %v; want the shared decoding %q (%s)", got.MemoryID, err, c.wantID, c.comment)
			}
		})
	}
}
