package domain_test

import (
	"encoding/json"
	"testing"

	"github.com/engram-memory/engram/domain"
)

type greeting struct {
	Text string   `json:"text"`
	Tags []string `json:"tags"`
}

func (greeting) EventType() string { return "Greeted" }

type textOnly struct {
	Text string `json:"text"`
}

func registry(t *testing.T) *domain.EventRegistry {
	t.Helper()
	r, err := domain.NewEventRegistry([]domain.EventDecoder{domain.DecoderOf[greeting]()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The registry decodes an event of a registered type into a pointer to its
// payload type, once: decoding the decoded event again keeps the value,
// and a Decode into the same type copies it instead of parsing the JSON.
func TestRegistryDecodesARegisteredTypeOnce(t *testing.T) {
	raw, _ := json.Marshal(greeting{Text: "from json", Tags: []string{"a"}})
	r := registry(t)
	e := r.Decode(domain.Event{Type: "Greeted", Payload: raw})
	p, err := e.Decoded()
	g, ok := p.(*greeting)
	if err != nil || !ok || g.Text != "from json" {
		t.Fatalf("Decoded() = %#v, %v; want *greeting from the JSON", p, err)
	}
	if again, _ := r.Decode(e).Decoded(); again != p {
		t.Fatalf("a second Decode parsed again: %p, want the first value %p", again, p)
	}
	g.Text = "decoded once" // tells the decoded value from the JSON
	var same greeting
	if err := e.Decode(&same); err != nil || same.Text != "decoded once" {
		t.Fatalf("Decode into the same type: %+v, %v; want the decoded value", same, err)
	}
	var other textOnly
	if err := e.Decode(&other); err != nil || other.Text != "from json" {
		t.Fatalf("Decode into another type: %+v, %v; want the JSON parsed", other, err)
	}
}

func TestRegistryDecodeOutcomes(t *testing.T) {
	tests := []struct {
		name        string
		event       domain.Event
		wantPayload bool
		wantErr     bool
	}{
		{"registered type", domain.Event{Type: "Greeted", Payload: json.RawMessage(`{"text":"hi"}`)}, true, false},
		{"type the registry does not know", domain.Event{Type: "Waved", Payload: json.RawMessage(`{}`)}, false, false},
		{"registered type whose payload does not parse", domain.Event{Type: "Greeted", Position: 7, Payload: json.RawMessage(`{"text":`)}, false, true},
	}
	r := registry(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := r.Decode(tc.event).Decoded()
			if (p != nil) != tc.wantPayload || (err != nil) != tc.wantErr {
				t.Fatalf("Decoded() = %#v, %v; want payload %v, error %v", p, err, tc.wantPayload, tc.wantErr)
			}
		})
	}
	if p, err := (domain.Event{Type: "Greeted"}).Decoded(); p != nil || err != nil {
		t.Fatalf("an event no registry decoded: %#v, %v; want nothing", p, err)
	}
}

func TestRegistryRefusesATypeRegisteredTwice(t *testing.T) {
	list := []domain.EventDecoder{domain.DecoderOf[greeting]()}
	if _, err := domain.NewEventRegistry(list, list); err == nil {
		t.Fatal("a type registered twice was accepted")
	}
}

// A payload from outside the log (a sync push, an import) is decoded
// strictly: a field its type does not have is refused, where the log's
// decoding ignores it; an unknown type is no payload and no error; a
// deriving decoder derives for both.
func TestRegistryDecodeStrict(t *testing.T) {
	r, err := domain.NewEventRegistry([]domain.EventDecoder{domain.DecoderDeriving(func(_ domain.Event, g *greeting) {
		g.Tags = append(g.Tags, "derived")
	})})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		event    domain.Event
		wantText string // "" when no payload is wanted
		wantErr  bool
	}{
		{"a known type", domain.Event{Type: "Greeted", Payload: []byte(`{"text":"hi"}`)}, "hi", false},
		{"a field the type does not have", domain.Event{Type: "Greeted", Payload: []byte(`{"text":"hi","extra":1}`)}, "", true},
		{"a payload that does not parse", domain.Event{Type: "Greeted", Payload: []byte(`{"text":`)}, "", true},
		{"an unknown type", domain.Event{Type: "Waved", Payload: []byte(`{"text":"hi"}`)}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := r.DecodeStrict(tt.event)
			if (err != nil) != tt.wantErr {
				t.Fatalf("DecodeStrict error = %v, want error %v", err, tt.wantErr)
			}
			g, _ := p.(*greeting)
			switch {
			case tt.wantText == "" && p != nil:
				t.Fatalf("DecodeStrict = %#v, want no payload", p)
			case tt.wantText != "" && (g == nil || g.Text != tt.wantText || len(g.Tags) != 1 || g.Tags[0] != "derived"):
				t.Fatalf("DecodeStrict = %#v, want *greeting %q with its derived tag", p, tt.wantText)
			}
		})
	}
	// The log's own decoding ignores the unknown field, and derives too.
	lenient, _ := r.Decode(domain.Event{Type: "Greeted", Payload: []byte(`{"text":"hi","extra":1}`)}).Decoded()
	if g, ok := lenient.(*greeting); !ok || g.Text != "hi" || len(g.Tags) != 1 {
		t.Fatalf("Decode = %#v, want *greeting \"hi\" with its derived tag", lenient)
	}
}
