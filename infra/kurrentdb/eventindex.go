package kurrentdb

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventlog"
)

// eventIndex is where the log holds each Engram event, by event id: what
// sync pushes and imports ask (EventPlaces) and KurrentDB has no index
// for. Without it every push scanned all of Engram's $all; with it the
// first call reads Engram's $all once, and each later call reads only the
// events appended since the one before, by any node, so it still sees
// every event committed before it began.
//
// The log is append-only for Engram (it never deletes or truncates a
// stream), so an indexed event stays where it is. The cost is memory:
// about 50 bytes per event (a 16-byte id, a stream number and a
// position), 50 MB for a million events, held from the first push or
// import on. Event ids in KurrentDB are UUIDs (Append refuses others), so
// an id that is not one is in no stream.
type eventIndex struct {
	// mu serializes catching up: concurrent callers wait for one read of
	// the new events rather than each reading them.
	mu sync.Mutex
	// upTo: every Engram event at or below this position is indexed.
	upTo   uint64
	places map[uuid.UUID]indexedPlace
	// streams interns the stream names places refer to.
	streams  []string
	streamNo map[string]uint32
}

type indexedPlace struct {
	stream   uint32
	position uint64
}

// lookup catches the index up with the log and looks ids up in it.
func (x *eventIndex) lookup(ctx context.Context, s *EventStore, ids []string) (map[string]domain.EventPlace, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.catchUp(ctx, s); err != nil {
		return nil, err
	}
	out := make(map[string]domain.EventPlace, len(ids))
	for _, id := range ids {
		key, err := uuid.Parse(id)
		if err != nil || key.String() != id {
			continue
		}
		if p, ok := x.places[key]; ok {
			out[id] = domain.EventPlace{Stream: x.streams[p.stream], Position: p.position}
		}
	}
	return out, nil
}

// catchUp indexes the Engram events after upTo, to the end of the log.
func (x *eventIndex) catchUp(ctx context.Context, s *EventStore) error {
	if x.places == nil {
		x.places, x.streamNo = map[uuid.UUID]indexedPlace{}, map[string]uint32{}
	}
	for {
		page, err := s.ReadAll(ctx, x.upTo, eventlog.FollowBatch)
		if err != nil {
			return err
		}
		for _, e := range page {
			x.add(e)
		}
		// ReadAll returns fewer than asked only at the end of the log.
		if len(page) < eventlog.FollowBatch {
			return nil
		}
	}
}

func (x *eventIndex) add(e domain.Event) {
	x.upTo = e.Position
	key, err := uuid.Parse(e.ID)
	if err != nil {
		return // toEvent gives the KurrentDB event id: always a UUID
	}
	no, ok := x.streamNo[e.Stream]
	if !ok {
		no = uint32(len(x.streams))
		x.streams = append(x.streams, e.Stream)
		x.streamNo[e.Stream] = no
	}
	x.places[key] = indexedPlace{stream: no, position: e.Position}
}
