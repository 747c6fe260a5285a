package projections

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// MemoriesProjectionName names the memories read model (its checkpoint
// and `engram projections rebuild memories`).
const MemoriesProjectionName = "memories"

// Memories projects the agent streams into the memories read model:
// agents, their memories and strength, which memory texts have vectors in
// which model, and the version of every agent stream applied, which the
// memory commands append at (so they decide on exactly the state they
// read).
//
// Races between writers that append with ExpectAny (the embedding queue and
// re-embedding jobs) or wrote logs before expected versions are settled
// here, in log order, the same way on every replay:
//   - a second AgentCreated for an agent that exists is ignored (the first
//     one's model binding wins);
//   - memory events for an agent that does not exist (it was deleted by an
//     event earlier in the log) are ignored;
//   - events for a memory that does not exist (purged) are ignored;
//   - a MemoryEmbedded whose text_hash is not the memory's current one is
//     ignored (it embedded a text that a later patch replaced).
type Memories struct {
	store memory.ReadModel
	// events decodes the events no engine decoded (see Events).
	events *domain.EventRegistry
}

// NewMemories returns the memories projection into store.
func NewMemories(store memory.ReadModel) *Memories { return &Memories{store: store, events: Events()} }

// Name implements Projection.
func (p *Memories) Name() string { return MemoriesProjectionName }

// Position implements Projection.
func (p *Memories) Position(ctx context.Context) (uint64, error) { return p.store.Checkpoint(ctx) }

// checkpointKey implements checkpointed.
func (p *Memories) checkpointKey() (domain.CheckpointTable, string, bool) { return keyOf(p.store) }

// Reset implements Projection.
func (p *Memories) Reset(ctx context.Context) error { return p.store.Reset(ctx) }

// UnitOfWork implements unitOfWorker.
func (p *Memories) UnitOfWork() domain.UnitOfWork { return unitOfWorkOf(p.store) }

// Apply implements Projection.
func (p *Memories) Apply(ctx context.Context, events []domain.Event) error {
	// A stream's version is recorded once per batch, at its last event.
	lastOfStream := map[string]uint64{}
	p.events.DecodeAll(events)
	for _, e := range events {
		if isAgentEvent(e) {
			lastOfStream[e.Stream] = e.Position
		}
	}
	return p.store.Apply(ctx, events, func(ctx context.Context, tx memory.ReadModelTx, e domain.Event) error {
		if err := applyMemoryEvent(ctx, tx, e); err != nil {
			return err
		}
		if lastOfStream[e.Stream] == e.Position && isAgentEvent(e) {
			return tx.RecordStreamVersion(ctx, e.Stream, e.Version)
		}
		return nil
	})
}

// isAgentEvent reports whether events of e's type are appended to agent
// streams (memory.AgentStream).
func isAgentEvent(e domain.Event) bool {
	payload, _ := e.Decoded()
	switch payload.(type) {
	case *memory.AgentCreated, *memory.MemoryCreated, *memory.MemoryEmbedded, *memory.MemoryUpdated,
		*memory.MemoryPatched, *memory.MemoryForgotten, *memory.MemoryPurged, *memory.AgentDeleted,
		*memory.AgentModelSwitched, *memory.MemoryRecovered, *memory.MemoryProtected, *memory.MemoryUnprotected,
		*memory.MemoryWeakened, *memory.MemoryVerified, *agentsettings.SettingsChanged, *memory.AgentImported:
		return true
	}
	return false
}

func applyMemoryEvent(ctx context.Context, tx memory.ReadModelTx, e domain.Event) error {
	payload, err := e.Decoded()
	if err != nil {
		return err
	}
	switch p := payload.(type) {
	case *memory.AgentCreated:
		return tx.AddAgent(ctx, *p)
	case *memory.MemoryCreated:
		return memoryCreated(ctx, tx, *p, e)
	case *memory.MemoryEmbedded:
		return tx.RecordEmbedding(ctx, p.AgentRef, p.MemoryID, p.Model, p.Dimensions, p.TextHash)
	case *memory.MemoryUpdated:
		return memoryUpdated(ctx, tx, *p)
	case *memory.MemoryPatched:
		return memoryPatched(ctx, tx, *p)
	case *memory.MemoryForgotten:
		return tx.Forget(ctx, p.AgentRef, p.MemoryID, p.ForgottenAt)
	case *memory.MemoryPurged:
		return memoryPurged(ctx, tx, *p)
	case *memory.AgentDeleted:
		return tx.DeleteAgent(ctx, p.AgentRef)
	case *memory.AgentModelSwitched:
		return agentModelSwitched(ctx, tx, *p)
	case *memory.MemoryRecovered:
		return memoryRecovered(ctx, tx, *p)
	case *memory.MemoryProtected:
		return changeVitality(ctx, tx, p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Protected, v.Base, v.Since = true, p.Strength, p.At })
	case *memory.MemoryUnprotected:
		return changeVitality(ctx, tx, p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Protected, v.Base, v.Since = false, p.Strength, p.At })
	case *memory.MemoryWeakened:
		return changeVitality(ctx, tx, p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Base, v.Since = p.Strength, p.At })
	case *memory.MemoryVerified:
		return memoryVerified(ctx, tx, *p)
	case *agentsettings.SettingsChanged:
		return settingsChanged(ctx, tx, *p)
	case *processing.PassRecorded:
		return passConsumed(ctx, tx, p.AgentRef, p.Consumed)
	}
	return nil // an event this read model does not hold
}

// passConsumed marks the memories a processing pass consumed, as the
// processing snapshot does from the same event (processing.State.Processed). A consumed memory of an agent deleted
// since is no longer held, so the mark never reaches a later agent of
// the same id.
func passConsumed(ctx context.Context, tx memory.ReadModelTx, agent processing.AgentRef, consumed []processing.Consumed) error {
	ref := memory.AgentRef{UserID: agent.UserID, AgentID: agent.AgentID}
	for _, c := range consumed {
		if err := tx.MarkConsumed(ctx, ref, c.ID); err != nil {
			return err
		}
	}
	return nil
}

// memoryCreated records a memory of a live agent at its initial strength
// from the time the log recorded it: a client's created_at is when the
// memory happened, not when this agent learned it.
func memoryCreated(ctx context.Context, tx memory.ReadModelTx, p memory.MemoryCreated, e domain.Event) error {
	if ok, err := tx.AgentExists(ctx, p.AgentRef); err != nil || !ok {
		return err
	}
	var v memory.Vitality
	if p.Derived != nil {
		v = p.Derived.Vitality // derived at e.Time when decoded (memory.Events)
	} else {
		v = memory.InitialVitality(p.Type, p.Content, e.Time)
	}
	return tx.InsertMemory(ctx, memory.NewMemory{MemoryCreated: p, Vitality: v})
}

func memoryUpdated(ctx context.Context, tx memory.ReadModelTx, p memory.MemoryUpdated) error {
	m, found, err := tx.Memory(ctx, p.AgentRef, p.MemoryID)
	if err != nil || !found {
		return err
	}
	v, err := changeContent(ctx, tx, p.AgentRef, p.MemoryID, m, p.Content, &p.Tags, p.TextHash, p.UpdatedAt)
	if err != nil {
		return err
	}
	if v != m.Vitality {
		return tx.SetVitality(ctx, p.AgentRef, p.MemoryID, v)
	}
	return nil
}

// memoryPatched applies the changed fields to the content as it stands
// now in log order, which is what lets concurrent patches of different
// fields all survive. A patch of the content fields strength and
// is_protected also changes the memory's live strength and protection,
// from the patch's time: the strength it had then is kept (or replaced
// by the new strength), and a null restores the default (1, or the
// type's default protection), as it does in content.
func memoryPatched(ctx context.Context, tx memory.ReadModelTx, p memory.MemoryPatched) error {
	m, found, err := tx.Memory(ctx, p.AgentRef, p.MemoryID)
	if err != nil || !found {
		return err
	}
	content := m.Content
	if p.Content != nil {
		if content, err = memory.ApplyContentChanges(m.Type, m.Content, p.Content); err != nil {
			return err
		}
	}
	v, err := changeContent(ctx, tx, p.AgentRef, p.MemoryID, m, content, p.Tags, p.TextHash, p.UpdatedAt)
	if err != nil {
		return err
	}
	strength, hasStrength := p.Content["strength"]
	protected, hasProtected := p.Content["is_protected"]
	if (hasStrength || hasProtected) && !v.Forgotten { // recover decides a forgotten memory's strength
		decay, err := tx.LazyDecay(ctx, p.AgentRef)
		if err != nil {
			return err
		}
		var newStrength *float64
		var newProtected *bool
		if err := errors.Join(json.Unmarshal(orNull(strength), &newStrength), json.Unmarshal(orNull(protected), &newProtected)); err != nil {
			return err
		}
		v.Base, v.Since = memory.Strength(p.UpdatedAt, v, decay), p.UpdatedAt
		if hasStrength {
			v.Base = memory.InitialStrength
			if newStrength != nil {
				v.Base = max(memory.MinDecayedStrength, *newStrength)
			}
		}
		if hasProtected {
			v.Protected = memory.DefaultProtected(v.Type)
			if newProtected != nil {
				v.Protected = *newProtected
			}
		}
	}
	if v != m.Vitality {
		return tx.SetVitality(ctx, p.AgentRef, p.MemoryID, v)
	}
	return nil
}

// orNull is raw, or JSON null when raw is empty.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// changeContent replaces the held memory m's content and (unless nil)
// tags, and keeps its agent's content size and the memory's pending state
// current. It returns m's strength basis as the new content leaves it (a
// goal's half-life follows its goal_type) for the caller to store.
func changeContent(ctx context.Context, tx memory.ReadModelTx, ref memory.AgentRef, id string, m memory.StoredMemory,
	content json.RawMessage, tags *[]string, textHash string, at time.Time) (memory.Vitality, error) {
	v := m.Vitality
	if err := tx.SetContent(ctx, ref, id, content, tags, textHash, at); err != nil {
		return v, err
	}
	if m.Type == memory.Goal {
		v.GoalType = memory.GoalType(m.Type, content)
	}
	if err := tx.AddToAgent(ctx, ref, 0, int64(len(content)-len(m.Content))); err != nil {
		return v, err
	}
	return v, tx.RefreshPending(ctx, ref, id)
}

func memoryPurged(ctx context.Context, tx memory.ReadModelTx, p memory.MemoryPurged) error {
	m, found, err := tx.Memory(ctx, p.AgentRef, p.MemoryID)
	if err != nil || !found {
		return err
	}
	if err := tx.DeleteMemory(ctx, p.AgentRef, p.MemoryID); err != nil {
		return err
	}
	return tx.AddToAgent(ctx, p.AgentRef, -1, -int64(len(m.Content)))
}

// agentModelSwitched moves the agent to another model. Vectors of the old
// model are dropped, as the vector projection drops them: switching back
// later needs them made again (a re-embedding job does that first).
func agentModelSwitched(ctx context.Context, tx memory.ReadModelTx, p memory.AgentModelSwitched) error {
	model, dims, found, err := tx.AgentModel(ctx, p.AgentRef)
	if err != nil || !found || (model == p.Model && dims == p.Dimensions) {
		return err
	}
	if err := tx.DropEmbeddings(ctx, p.AgentRef, model, dims); err != nil {
		return err
	}
	if err := tx.SetAgentModel(ctx, p.AgentRef, p.Model, p.Dimensions); err != nil {
		return err
	}
	return tx.RefreshPending(ctx, p.AgentRef, "")
}

// changeVitality applies change to a held memory's strength basis and
// counts a new version of it.
func changeVitality(ctx context.Context, tx memory.ReadModelTx, ref memory.AgentRef, id string, change func(*memory.Vitality)) error {
	m, found, err := tx.Memory(ctx, ref, id)
	if err != nil || !found {
		return err
	}
	change(&m.Vitality)
	if err := tx.SetVitality(ctx, ref, id, m.Vitality); err != nil {
		return err
	}
	return tx.CountVersion(ctx, ref, id)
}

// memoryRecovered brings a forgotten memory back at the event's strength,
// decaying from the time of the recovery; its pending state is recomputed
// (a vector made before it was forgotten still serves).
func memoryRecovered(ctx context.Context, tx memory.ReadModelTx, p memory.MemoryRecovered) error {
	m, found, err := tx.Memory(ctx, p.AgentRef, p.MemoryID)
	if err != nil || !found || !m.Vitality.Forgotten {
		return err
	}
	if err := tx.Recover(ctx, p.AgentRef, p.MemoryID); err != nil {
		return err
	}
	if err := changeVitality(ctx, tx, p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Base, v.Since = p.Strength, p.RecoveredAt }); err != nil {
		return err
	}
	return tx.RefreshPending(ctx, p.AgentRef, p.MemoryID)
}

func memoryVerified(ctx context.Context, tx memory.ReadModelTx, p memory.MemoryVerified) error {
	if err := changeVitality(ctx, tx, p.AgentRef, p.MemoryID, func(v *memory.Vitality) { v.Base, v.Since = p.Strength, p.VerifiedAt }); err != nil {
		return err
	}
	return tx.CountVerification(ctx, p.AgentRef, p.MemoryID, p.VerifiedAt)
}

// settingsChanged stores the agent's whole settings (ignored for an agent
// that does not exist).
func settingsChanged(ctx context.Context, tx memory.ReadModelTx, p agentsettings.SettingsChanged) error {
	if ok, err := tx.AgentExists(ctx, p.AgentRef); err != nil || !ok {
		return err
	}
	raw, err := json.Marshal(p.Settings)
	if err != nil {
		return err
	}
	return tx.PutSettings(ctx, p.AgentRef, raw, p.Settings.LazyDecay, p.ChangedAt)
}
