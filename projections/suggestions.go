package projections

import (
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
	return &readModel[processing.SuggestionsTx]{name: SuggestionsProjectionName, store: store, apply: applySuggestionEvent, events: Events()}
}

func applySuggestionEvent(ctx context.Context, tx processing.SuggestionsTx, e domain.Event) error {
	payload, err := e.Decoded()
	if err != nil {
		return err
	}
	switch p := payload.(type) {
	case *processing.SuggestionCreated:
		return tx.AddSuggestion(ctx, *p)
	case *processing.SuggestionResolved:
		return tx.Resolve(ctx, *p)
	case *memory.MemoryCreated:
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
	case *memory.AgentDeleted:
		return tx.DeleteAgentSuggestions(ctx, p.UserID, p.AgentID)
	}
	return nil
}
