package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EventDecoder decodes the payload of one event type into its typed value.
// Each domain package lists its event types' decoders (its Events
// function); an EventRegistry is composed from such lists.
type EventDecoder struct {
	// Type is the event type it decodes (Payload.EventType).
	Type string
	// newPayload is a new *T to decode into (zero, or the defaults of
	// DecoderOnto); derive, when set, fills
	// what the payload derives from the event beyond its JSON.
	newPayload func() Payload
	derive     func(Event, Payload)
}

// DecoderOf decodes events of payload type T into a *T.
func DecoderOf[T any, P interface {
	*T
	Payload
}]() EventDecoder {
	return EventDecoder{Type: P(new(T)).EventType(), newPayload: func() Payload { return P(new(T)) }}
}

// DecoderOnto decodes events of payload type T onto the value start
// returns: a field the payload leaves out, or sends as null, keeps start's
// value. It is the upcast of an event type that gained fields: an event
// written before a field existed reads as if it held the field's default,
// the same for every reader (the live fold, a replay, a pushed or imported
// copy of it).
func DecoderOnto[T any, P interface {
	*T
	Payload
}](start func() P) EventDecoder {
	return EventDecoder{Type: P(new(T)).EventType(), newPayload: func() Payload { return start() }}
}

// DecoderDeriving decodes events of payload type T into a *T and then has
// derive fill the values the payload derives from the event beyond its
// JSON, once for every reader.
func DecoderDeriving[T any, P interface {
	*T
	Payload
}](derive func(e Event, p P)) EventDecoder {
	d := DecoderOf[T, P]()
	d.derive = func(e Event, p Payload) { derive(e, p.(P)) }
	return d
}

// EventRegistry knows how to decode the event types registered with it.
// It is built once by the composition that reads the log (the projection
// engine) and never changes after.
type EventRegistry struct {
	decoders map[string]EventDecoder
}

// NewEventRegistry registers the decoders of every list; a type registered
// twice is an error, since which decoder wins would be an accident.
func NewEventRegistry(lists ...[]EventDecoder) (*EventRegistry, error) {
	r := &EventRegistry{decoders: map[string]EventDecoder{}}
	for _, list := range lists {
		for _, d := range list {
			if _, dup := r.decoders[d.Type]; dup {
				return nil, fmt.Errorf("event registry: %q registered twice", d.Type)
			}
			r.decoders[d.Type] = d
		}
	}
	return r, nil
}

// MustEventRegistry is NewEventRegistry for lists fixed at build time,
// where a type registered twice is a programming error (the registries'
// tests fail first).
func MustEventRegistry(lists ...[]EventDecoder) *EventRegistry {
	r, err := NewEventRegistry(lists...)
	if err != nil {
		panic(err)
	}
	return r
}

// Knows reports whether eventType is registered: a reader given an event
// decoded by a larger registry tells so whether a decoding error is of an
// event it reads.
func (r *EventRegistry) Knows(eventType string) bool {
	_, ok := r.decoders[eventType]
	return ok
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
	if dec, ok := r.decoders[e.Type]; ok {
		if d.payload, d.err = dec.decode(e, json.Unmarshal); d.err != nil {
			d.payload, d.err = nil, fmt.Errorf("decode %s at %d: %w", e.Type, e.Position, d.err)
		}
	}
	e.decoding = d
	return e
}

// DecodeStrict decodes the payload of an event that comes from outside
// the log (a sync push, an import) into its registered type, as Decode
// does, except that a field the type does not have is an error: from a
// client it is a mistake to report, where in the log it would be a newer
// writer's addition to ignore. The payload is nil, with no error, for a
// type the registry does not know.
func (r *EventRegistry) DecodeStrict(e Event) (Payload, error) {
	dec, ok := r.decoders[e.Type]
	if !ok {
		return nil, nil
	}
	return dec.decode(e, unmarshalStrict)
}

// decode unmarshals e's payload into a new value of d's type.
func (d EventDecoder) decode(e Event, unmarshal func([]byte, any) error) (Payload, error) {
	p := d.newPayload()
	if err := unmarshal(e.Payload, p); err != nil {
		return nil, err
	}
	if d.derive != nil {
		d.derive(e, p)
	}
	return p, nil
}

// unmarshalStrict is json.Unmarshal refusing unknown fields, taking an
// integral number for an integer field (a pushed event's, as the OpenAPI
// document has them).
func unmarshalStrict(data []byte, v any) error {
	return DecodeIntegral(data, v, func(data []byte, v any) error {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	})
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
