package projections

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

func TestBatchCodecRoundTrip(t *testing.T) {
	events := []domain.Event{
		{ID: "e1", Stream: "agent-u-a", Version: 0, Position: 1, Type: "MemoryCreated", SchemaVersion: 1,
			Time: time.Date(2026, 11, 22, 10, 0, 0, 123, time.UTC), Actor: domain.Actor{Kind: domain.ActorKey, ID: "k", UserID: "u"},
			RequestID: "req_1", Source: domain.SourceMCP, Payload: json.RawMessage(`{"a":1}`)},
		{ID: "e2", Stream: "s", Version: 7, Position: 1 << 40, Type: "X", SchemaVersion: 2,
			Time: time.Unix(0, 0).UTC(), Payload: json.RawMessage(`{}`)},
	}
	got, err := decodeBatch(encodeBatch(events))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, events)
	}
}

func TestBatchCodecRejectsDamage(t *testing.T) {
	full := encodeBatch([]domain.Event{{ID: "e1", Stream: "s", Type: "T", Position: 1, Payload: json.RawMessage(`{"x":1}`)}})
	cases := map[string][]byte{
		"empty":       {},
		"truncated":   full[:len(full)-3],
		"no events":   encodeBatch(nil),
		"bad version": append([]byte{9}, full[1:]...),
	}
	for name, b := range cases {
		if _, err := decodeBatch(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
