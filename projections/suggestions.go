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
// passes proposed, and of their resolutions, into the suggestions read
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
	case memory.AgentDeleted{}.EventType():
		var p memory.AgentDeleted
		if err := e.Decode(&p); err != nil {
			return err
		}
		return tx.DeleteAgentSuggestions(ctx, p.UserID, p.AgentID)
	}
	return nil
}
