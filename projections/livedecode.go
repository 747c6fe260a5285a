package projections

import (
	"sync"

	"github.com/engram-memory/engram/domain"
)

// liveDecodes decodes the payloads several projections read (see
// sharedPayload) once for all the live handlers, as the replay does with
// decodeOnce. Every handler receives the same appended events at about the
// same time; the first to reach an event decodes it while the others wait
// for that decoding instead of parsing the JSON again, so each payload is
// parsed once instead of once per projection. Decoding happens in the
// handler before Apply, outside the read models' write transaction, which
// the SQLite projections take in turn.
//
// The decodings live in a ring of recent positions: a handler far enough
// behind the others to find its events' slots reused decodes them itself,
// which costs time, never correctness.
type liveDecodes struct {
	mu    sync.Mutex
	slots []*decodeSlot // slot of position p: slots[p % len(slots)]
}

// decodeSlot is one event's shared decoding; v stays nil if the payload
// did not parse (the projections then report the error themselves).
type decodeSlot struct {
	position uint64
	once     sync.Once
	v        any
}

// liveDecodeSlots is the ring's size: four batches of 1,000 memories with
// their embeddings, enough for handlers a few batches apart.
const liveDecodeSlots = 8192

func newLiveDecodes(slots int) *liveDecodes {
	return &liveDecodes{slots: make([]*decodeSlot, slots)}
}

// attach sets each shared payload of events decoded (domain.Event.WithDecoded).
func (d *liveDecodes) attach(events []domain.Event) {
	for i, e := range events {
		v := sharedPayload(e.Type)
		if v == nil {
			continue
		}
		s := d.slot(e.Position)
		s.once.Do(func() {
			if decodeShared(e, v) {
				s.v = v
			}
		})
		if s.v != nil {
			events[i] = e.WithDecoded(s.v)
		}
	}
}

// slot returns position's slot, a fresh one if the ring holds another
// position there.
func (d *liveDecodes) slot(position uint64) *decodeSlot {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := position % uint64(len(d.slots))
	if s := d.slots[i]; s != nil && s.position == position {
		return s
	}
	s := &decodeSlot{position: position}
	d.slots[i] = s
	return s
}
