package projections_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/projections"
)

// The projections' registry holds every domain package's events, each once,
// and decodes each into a pointer to its payload type; a created memory
// comes with its derived values, computed once for every projection.
func TestEventsRegistersEveryDomainEventOnce(t *testing.T) {
	events := projections.Events() // panics on a type registered twice
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []domain.Payload{
		memory.MemoryCreated{MemoryID: "m1", Type: memory.Note, Content: json.RawMessage(`{"content":"x"}`)},
		memory.AgentDeleted{},
		agentsettings.SettingsChanged{},
		processing.SuggestionCreated{},
		job.Queued{},
		account.UserRegistered{},
	}
	for _, payload := range tests {
		t.Run(payload.EventType(), func(t *testing.T) {
			ne, err := domain.MarshalEvent(payload, domain.Metadata{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := events.Decode(domain.Event{Type: ne.Type, Payload: ne.Payload, Time: at}).Decoded()
			if err != nil || got == nil || got.EventType() != payload.EventType() {
				t.Fatalf("Decoded() = %#v, %v; want a %s", got, err, payload.EventType())
			}
			if c, ok := got.(*memory.MemoryCreated); ok && c.Derived == nil {
				t.Fatal("a created memory was decoded without its derived values")
			}
		})
	}
}
