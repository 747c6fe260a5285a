package projections

import (
	"bytes"
	"context"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// SuggestionsProjectionName names the suggestions read model.
const SuggestionsProjectionName = "suggestions"

// NewSuggestions returns the projection of the suggestions processing
// passes proposed, and of their resolutions (a promotion comes with the
// memory it created), into the suggestions read
// model. Deleting an agent removes its suggestions.
func NewSuggestions(store processing.SuggestionsReadModel) Projection {
	return &readModel[processing.SuggestionsTx]{name: SuggestionsProjectionName, store: store, apply: applySuggestionEvent}
}

func applySuggestionEvent(ctx context.Context, tx processing.SuggestionsTx, e domain.Event) error {
	switch e.Type {
	case processing.SuggestionCreated{}.EventType():
		var p processing.SuggestionCreated
		if err := e.Decode(&p); err != nil {
			return err
		}
		return tx.AddSuggestion(ctx, p)
	case processing.SuggestionResolved{}.EventType():
		var p processing.SuggestionResolved
		if err := e.Decode(&p); err != nil {
			return err
		}
		return tx.Resolve(ctx, p)
	case memory.MemoryCreated{}.EventType():
		if !bytes.Contains(e.Payload, []byte(`"promotes"`)) {
			return nil // most memories come from no suggestion: skip decoding them
		}
		var p memory.MemoryCreated
		if err := e.Decode(&p); err != nil {
			return err
		}
		if p.Promotes == nil {
			return nil
		}
		// Accepting a suggestion records the promotion in the memory's
		// creation, one append (see commands.PromotedMemoryID).
		status := processing.Promoted
		if p.Promotes.Modified {
			status = processing.Modified
		}
		return tx.Promote(ctx, processing.SuggestionResolved{
			AgentRef:     processing.AgentRef{UserID: p.UserID, AgentID: p.AgentID},
			SuggestionID: p.Promotes.SuggestionID, Status: status,
			PromotedTo: string(p.Type) + ":" + p.MemoryID, ResolvedAt: e.Time,
		})
	case memory.AgentDeleted{}.EventType():
		var p memory.AgentDeleted
		if err := e.Decode(&p); err != nil {
			return err
		}
		return tx.DeleteAgentSuggestions(ctx, p.UserID, p.AgentID)
	}
	return nil
}
