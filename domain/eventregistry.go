package domain

import (
	"encoding/json"
	"fmt"
)

// EventDecoder decodes the payload of one event type into its typed value.
// Each domain package lists its event types' decoders (its Events
// function); an EventRegistry is composed from such lists.
type EventDecoder struct {
	// Type is the event type it decodes (Payload.EventType).
	Type   string
	decode func(Event) (Payload, error)
}

// DecoderOf decodes events of payload type T into a *T.
func DecoderOf[T any, P interface {
	*T
	Payload
}]() EventDecoder {
	return EventDecoder{Type: P(new(T)).EventType(), decode: func(e Event) (Payload, error) {
		p := P(new(T))
		if err := json.Unmarshal(e.Payload, p); err != nil {
			return nil, err
		}
		return p, nil
	}}
}

// DecoderFunc decodes events of eventType with decode, for a payload that
// derives values from the event beyond its JSON once for every reader.
func DecoderFunc(eventType string, decode func(Event) (Payload, error)) EventDecoder {
	return EventDecoder{Type: eventType, decode: decode}
}

// EventRegistry knows how to decode the event types registered with it.
// It is built once by the composition that reads the log (the projection
// engine) and never changes after.
type EventRegistry struct {
	decoders map[string]func(Event) (Payload, error)
}

// NewEventRegistry registers the decoders of every list; a type registered
// twice is an error, since which decoder wins would be an accident.
func NewEventRegistry(lists ...[]EventDecoder) (*EventRegistry, error) {
	r := &EventRegistry{decoders: map[string]func(Event) (Payload, error){}}
	for _, list := range lists {
		for _, d := range list {
			if _, dup := r.decoders[d.Type]; dup {
				return nil, fmt.Errorf("event registry: %q registered twice", d.Type)
			}
			r.decoders[d.Type] = d.decode
		}
	}
	return r, nil
}

// decoding is an event's payload as its registry decoded it: payload is
// nil for a type the registry does not know, or when err says the payload
// did not parse.
type decoding struct {
	payload Payload
	err     error
}

// Decode returns e with its payload decoded into the registered type's
// value (Event.Decoded); an event decoded already is returned as it is, so
// the payload is parsed once however many readers decode it. The value is
// shared by every copy of the event: its readers must not modify it.
func (r *EventRegistry) Decode(e Event) Event {
	if e.decoding != nil {
		return e
	}
	d := &decoding{}
	if decode := r.decoders[e.Type]; decode != nil {
		if d.payload, d.err = decode(e); d.err != nil {
			d.payload, d.err = nil, fmt.Errorf("decode %s at %d: %w", e.Type, e.Position, d.err)
		}
	}
	e.decoding = d
	return e
}

// DecodeAll decodes in place the events of events no registry decoded
// yet (Decode). It writes nothing to a slice decoded already, so readers
// that share one decoded batch may all call it.
func (r *EventRegistry) DecodeAll(events []Event) {
	for i := range events {
		if events[i].decoding == nil {
			events[i] = r.Decode(events[i])
		}
	}
}

// Decoded is the payload EventRegistry.Decode decoded, a pointer to the
// registered payload type for a type switch: nil for a type the registry
// does not know (and for an event no registry decoded), an error when the
// payload of a registered type does not parse.
func (e Event) Decoded() (Payload, error) {
	if e.decoding == nil {
		return nil, nil
	}
	return e.decoding.payload, e.decoding.err
}
