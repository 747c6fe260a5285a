package readmodeltest

import (
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// eventLog is an event log in memory for the cases that feed a store
// through its projection: events get positions (from 1) and stream
// versions (from 0 per stream) as a real log gives them.
type eventLog struct {
	all      []domain.Event
	versions map[string]uint64
}

// record appends payloads to stream and returns them as the log's events.
func (l *eventLog) record(t *testing.T, stream string, payloads ...domain.Payload) []domain.Event {
	t.Helper()
	if l.versions == nil {
		l.versions = map[string]uint64{}
	}
	batch := make([]domain.Event, len(payloads))
	for i, p := range payloads {
		e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
		if err != nil {
			t.Fatal(err)
		}
		version, known := l.versions[stream]
		if known {
			version++
		}
		l.versions[stream] = version
		position := uint64(len(l.all) + 1)
		batch[i] = domain.Event{ID: fmt.Sprintf("e%d", position), Stream: stream, Version: version, Position: position,
			Type: e.Type, SchemaVersion: e.SchemaVersion, Time: logTime, Actor: e.Actor, Payload: e.Payload}
		l.all = append(l.all, batch[i])
	}
	return batch
}

// logTime is the time of every event of an eventLog: the stores read
// the times of the payloads, never the event's.
var logTime = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
