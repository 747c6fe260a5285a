package processing

import (
	"context"

	"github.com/engram-memory/engram/domain"
)

// SuggestionsReadModel is the suggestions read model's store
// (projections/suggestions.go feeds it).
type SuggestionsReadModel = domain.ReadModelStore[SuggestionsTx]

// SuggestionsTx changes the suggestions read model within one batch.
type SuggestionsTx interface {
	// AddSuggestion records a pending suggestion; an id held already
	// changes nothing.
	AddSuggestion(ctx context.Context, s SuggestionCreated) error
	// Resolve moves the user's suggestion out of pending; a suggestion
	// resolved already, or of another user, changes nothing.
	Resolve(ctx context.Context, r SuggestionResolved) error
	// Promote records a promotion (Status promoted or modified) that a
	// memory's creation carries. It wins over a resolution recorded
	// before: the memory exists, so the suggestion says what it became.
	Promote(ctx context.Context, r SuggestionResolved) error
	// DeleteAgentSuggestions removes every suggestion of the agent.
	DeleteAgentSuggestions(ctx context.Context, userID, agentID string) error
}
