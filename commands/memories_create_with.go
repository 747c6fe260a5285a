package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// MadeMemory is what CreateWith did with one of its items.
type MadeMemory struct {
	Memory CreatedMemory
	// Existed: a memory had the item's id already (an earlier write of
	// the same item stored it), so nothing is appended for it.
	Existed bool
	// Purged: an earlier write of the same item stored a memory with its
	// id, which has been purged since (the log keeps its id taken for
	// good): the purge stands, nothing is appended for it, and
	// Memory.CreatedAt is zero.
	Purged bool
	// Err is why the item is not stored (validation, quotas, provenance,
	// derived_from, maintenance); the other items are stored without it.
	Err error
}

// CreateWith records memories of the agent together with another
// stream's events in one append (domain.EventStore.AppendStreams): both
// are stored or neither. Each item is checked as Create checks it; an
// item refused is left out and said so in its MadeMemory, the others go
// on (a quota admits the first items that fit, as one create at a time
// would). with builds the other stream's part from the items' outcomes (in
// the order of in); it is called again whenever the memories are decided
// again. An item whose id (MemoryInput.id) a memory has already is not
// written again (MadeMemory.Existed), nor is one whose memory was
// purged since (MadeMemory.Purged).
//
// The items are decided before they are embedded, as Create does: a
// write refused whole (every item refused, or the other stream moved on
// already) pays no embedding call, and only the items the decision admits
// are embedded. An item admitted only when decided again is stored with
// its embedding pending, for the queue.
//
// When other writes reach the agent's stream first, the memories are
// decided again, as Create does. When the other stream has moved from
// the version its part expects, nothing is stored and the error wraps
// domain.ErrWrongExpectedVersion: the caller decided on a state that is
// gone.
//
// On a KurrentDB older than 25.1, which stores one stream at a time, the
// memories' part, which goes first, can be stored without the other:
// the items' derived ids are what keeps a repeated write from storing
// them twice.
func (m *Memories) CreateWith(ctx context.Context, meta domain.Metadata, agentID string, in []MemoryInput, with func(made []MadeMemory) (StreamPart, error)) error {
	userID, err := userOf(meta)
	if err != nil {
		return err
	}
	if err := memory.ValidateAgentID(agentID); err != nil {
		return err
	}
	now := m.now()
	items := make([]pendingMemory, len(in))
	invalid := make([]error, len(in))
	for i, input := range in {
		items[i], invalid[i] = m.prepare(input, now)
	}
	model := m.cfg.DefaultModel
	if agent, exists, err := m.cfg.Reader.Agent(ctx, userID, agentID); err != nil {
		return err
	} else if exists {
		model = domain.EmbeddingModel{Name: agent.EmbeddingModel, Dimensions: agent.Dimensions}
	}
	purged := make([]bool, len(items))
	if err := m.markPurged(ctx, userID, in, items, invalid, purged); err != nil {
		return err
	}
	vectors, err := m.embedAdmitted(ctx, userID, agentID, items, invalid, purged, model, with)
	if err != nil {
		return err
	}

	unlock := m.lockUser(userID)
	defer func() { unlock() }()
	stream := memory.AgentStream(userID, agentID)
	for attempt := 1; ; attempt++ {
		version, err := m.cfg.Reader.StreamVersion(ctx, stream)
		if err != nil {
			return err
		}
		made, payloads, err := m.decideMade(ctx, userID, agentID, items, invalid, purged, model, vectors)
		if err != nil {
			return err
		}
		other, err := with(made)
		if err != nil {
			return err
		}
		var parts []StreamPart
		if len(payloads) > 0 {
			parts = append(parts, StreamPart{Stream: stream, Expected: version, Payloads: payloads})
		}
		parts = append(parts, other)
		position, appendErr := m.cfg.Writer.appendStreamsSeenBy(ctx, meta, m.cfg.DecidesOn, parts)
		if appendErr == nil {
			unlock()
			unlock = func() {}
			if err := m.cfg.Writer.Await(ctx, position); err != nil {
				return err
			}
			for _, mm := range made {
				if mm.Err == nil && !mm.Existed && !mm.Purged && mm.Memory.Embedding.Status == memory.StatusPending {
					m.kick()
					break
				}
			}
			return nil
		}
		if i := takenItem(appendErr, items, purged); i >= 0 {
			// The log holds the item's id although the read model shows
			// no memory with it: once the read model has caught up, a
			// memory still missing was stored by an earlier write and
			// purged since. Writing it again would undo the purge, so it
			// stays purged, and the others are decided again.
			if err := m.cfg.Writer.CatchUp(ctx, m.cfg.DecidesOn...); err != nil {
				return err
			}
			if _, found, err := m.cfg.Reader.Memory(ctx, userID, items[i].id); err != nil {
				return err
			} else if !found {
				purged[i] = true
			}
			continue
		}
		if !errors.Is(appendErr, domain.ErrWrongExpectedVersion) {
			return appendErr
		}
		// Which stream moved? Once the read model shows the log's head,
		// an agent stream still at version says it was the other one.
		if err := m.cfg.Writer.CatchUp(ctx, m.cfg.DecidesOn...); err != nil {
			return err
		}
		now, err := m.cfg.Reader.StreamVersion(ctx, stream)
		if err != nil {
			return err
		}
		if now == version {
			return appendErr
		}
		if attempt == m.cfg.AgentAttempts {
			return domain.Conflict("concurrent_writes", "agent %s changed %d times while this write was being decided; retry the request", agentID, attempt)
		}
		m.logger.DebugContext(ctx, "agent stream moved on; deciding again", "agent_id", agentID, "attempt", attempt)
	}
}

// markPurged marks purged the items whose id an earlier write is known
// to have taken (MemoryInput.taken) and that no memory has once the read
// models have caught up with the log: the purge stands, and their text is
// neither embedded nor written again. An item whose id is taken without
// its caller knowing it (a pass whose record was refused after its
// memories were stored, on a KurrentDB before 25.1) is found only when the
// append is refused (takenItem).
func (m *Memories) markPurged(ctx context.Context, userID string, in []MemoryInput, items []pendingMemory, invalid []error, purged []bool) error {
	caughtUp := false
	for i, input := range in {
		if !input.taken || invalid[i] != nil || items[i].id == "" {
			continue
		}
		_, found, err := m.cfg.Reader.Memory(ctx, userID, items[i].id)
		if err == nil && !found && !caughtUp {
			// A read model behind the log may not show the memory yet.
			caughtUp = true
			if err = m.cfg.Writer.CatchUp(ctx, m.cfg.DecidesOn...); err == nil {
				_, found, err = m.cfg.Reader.Memory(ctx, userID, items[i].id)
			}
		}
		if err != nil {
			return err
		}
		purged[i] = !found
	}
	return nil
}

// embedAdmitted decides the items on the state as it is now, without
// the lock, and embeds those the decision would store (in one provider
// call); vectors[i] is nil for the others. A write the decision refuses
// whole, or whose other part (with) expects a version its stream has
// moved on from, embeds nothing: the latter fails as the append would,
// wrapping domain.ErrWrongExpectedVersion.
func (m *Memories) embedAdmitted(ctx context.Context, userID, agentID string, items []pendingMemory, invalid []error, purged []bool,
	model domain.EmbeddingModel, with func(made []MadeMemory) (StreamPart, error)) ([][]float32, error) {
	vectors := make([][]float32, len(items))
	made, _, err := m.decideMade(ctx, userID, agentID, items, invalid, purged, model, vectors)
	if err != nil {
		return nil, err
	}
	other, err := with(made)
	if err != nil {
		return nil, err
	}
	if moved, err := m.cfg.Writer.movedOn(ctx, other.Stream, other.Expected); err != nil {
		return nil, err
	} else if moved {
		return nil, fmt.Errorf("commands: %s moved on from version %d: %w", other.Stream, other.Expected, domain.ErrWrongExpectedVersion)
	}
	var admitted []pendingMemory
	var at []int
	for i, mm := range made {
		if mm.Err == nil && !mm.Existed && !mm.Purged {
			admitted, at = append(admitted, items[i]), append(at, i)
		}
	}
	if len(admitted) == 0 {
		return vectors, nil
	}
	for k, v := range m.embedOnWrite(ctx, agentID, model, admitted) {
		vectors[at[k]] = v
	}
	return vectors, nil
}

// takenItem is the index of the item whose derived id the log refused
// as taken (appendErr wraps a *domain.ClaimTakenError of its
// domain.MemoryClaim) and that is not known purged yet, or -1.
func takenItem(appendErr error, items []pendingMemory, purged []bool) int {
	var taken *domain.ClaimTakenError
	if !errors.As(appendErr, &taken) {
		return -1
	}
	for i, it := range items {
		if it.id != "" && !purged[i] && domain.MemoryClaim(it.id) == taken.Key {
			return i
		}
	}
	return -1
}

// decideMade decides the items on the read model as it is now: those a
// memory has already are Existed, those known purged (purged[i]) are
// Purged; each item the decision refuses is left
// out with its error, and the rest decided again; a refusal that names
// no item (a quota, maintenance) refuses the last item left. It returns
// the events of the items to store.
func (m *Memories) decideMade(ctx context.Context, userID, agentID string, items []pendingMemory, invalid []error, purged []bool,
	model domain.EmbeddingModel, vectors [][]float32) ([]MadeMemory, []domain.Payload, error) {
	made := make([]MadeMemory, len(items))
	var todo []int
	for i, it := range items {
		if made[i].Err = invalid[i]; made[i].Err != nil {
			continue
		}
		if purged[i] {
			made[i] = MadeMemory{Memory: CreatedMemory{Type: it.typ, ID: it.id}, Purged: true}
			continue
		}
		if it.id != "" {
			v, found, err := m.cfg.Reader.Memory(ctx, userID, it.id)
			if err != nil {
				return nil, nil, err
			}
			if found {
				made[i] = MadeMemory{Memory: CreatedMemory{Type: v.Type, ID: v.ID, CreatedAt: v.CreatedAt}, Existed: true}
				continue
			}
		}
		todo = append(todo, i)
	}
	for len(todo) > 0 {
		sub, subVectors := make([]pendingMemory, len(todo)), make([][]float32, len(todo))
		for k, i := range todo {
			sub[k], subVectors[k] = items[i], vectors[i]
		}
		refused := -1
		created, payloads, err := m.decideCreate(ctx, userID, agentID, sub, model, subVectors, func(k int, err error) error {
			refused = k
			return err
		})
		if err == nil {
			for k, i := range todo {
				made[i].Memory = created[k]
			}
			return made, payloads, nil
		}
		if _, ok := domain.AsError(err); !ok {
			return nil, nil, err
		}
		if refused < 0 {
			// A refusal of the whole (a quota, maintenance) refuses the
			// last item: the items before it are stored if they fit, as
			// they would be one create at a time.
			refused = len(todo) - 1
		}
		made[todo[refused]].Err = err
		todo = append(todo[:refused:refused], todo[refused+1:]...)
	}
	return made, nil, nil
}
