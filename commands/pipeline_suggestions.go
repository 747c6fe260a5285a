package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// suggestion returns one suggestion of the user, with its status now, as
// the suggestions read model shows it.
func (c *Pipeline) suggestion(ctx context.Context, userID, id string) (processing.Suggestion, error) {
	sg, ok, err := c.cfg.Suggestions.Suggestion(ctx, userID, id)
	if err != nil {
		return processing.Suggestion{}, err
	}
	if !ok {
		return processing.Suggestion{}, domain.NotFound("suggestion")
	}
	sg.Status = sg.StatusAt(c.now())
	return sg, nil
}

// AcceptOverrides change a suggestion's content before it becomes a
// memory: Content's top-level fields replace the suggestion's, Tags are
// added to the memory.
type AcceptOverrides struct {
	Content json.RawMessage
	Tags    []string
}

// Accepted is the outcome of an accept.
type Accepted struct {
	Suggestion processing.Suggestion
	Memory     CreatedMemory
}

// autoSuggestedTag marks episodes and notes that came from a suggestion.
const autoSuggestedTag = "auto-suggested"

// Accept promotes a pending suggestion: the memory is created through the
// memory create command (same validation, quotas and embedding), derived
// from the suggestion's sources, and the suggestion becomes promoted (or
// modified, when overrides changed its content).
//
// It is one append: the memory's MemoryCreated carries the promotion
// (memory.Promotion), from which the suggestions read model derives the
// suggestion's new status, and the memory's id is derived from the
// suggestion's (PromotedMemoryID), so that of concurrent accepts, on one
// node or several, exactly one creates the memory and the others fail
// with suggestion_not_pending. Nothing is locked in process.
func (c *Pipeline) Accept(ctx context.Context, meta domain.Metadata, id string, o AcceptOverrides) (Accepted, error) {
	userID, err := userOf(meta)
	if err != nil {
		return Accepted{}, err
	}
	sg, err := c.pendingSuggestion(ctx, userID, id, processing.Promoted)
	if err != nil {
		return Accepted{}, err
	}
	content, modified, err := overrideContent(sg.Content, o.Content)
	if err != nil {
		return Accepted{}, err
	}
	typ := memory.Type(sg.MemoryType)
	tags := append([]string{}, o.Tags...)
	if typ == memory.Episode || typ == memory.Note {
		tags = append([]string{autoSuggestedTag}, tags...)
	}
	made, err := c.cfg.Creator.Create(ctx, meta, sg.AgentID, MemoryInput{Type: sg.MemoryType, Content: content, Tags: tags, DerivedFrom: sg.Sources,
		FromProcessing: true, Promotes: &memory.Promotion{SuggestionID: id, Modified: modified}})
	if err != nil {
		return Accepted{}, err
	}
	sg, err = c.suggestion(ctx, userID, id)
	return Accepted{Suggestion: sg, Memory: made}, err
}

// pendingSuggestion returns the user's suggestion if it is pending now,
// as the suggestions read model shows it (which sees promotions, recorded
// on the agent's memory stream, as well as the cognition stream's
// resolutions); otherwise a conflict naming its status.
func (c *Pipeline) pendingSuggestion(ctx context.Context, userID, id string, to processing.Status) (processing.Suggestion, error) {
	sg, err := c.suggestion(ctx, userID, id)
	if err != nil {
		return processing.Suggestion{}, err
	}
	if sg.Status != processing.Pending {
		return processing.Suggestion{}, domain.Conflict("suggestion_not_pending", "suggestion %s is %s; only pending suggestions can be %s", id, sg.Status, to)
	}
	return sg, nil
}

// overrideContent merges the override's top-level fields into content.
func overrideContent(content, override json.RawMessage) (json.RawMessage, bool, error) {
	if len(bytes.TrimSpace(override)) == 0 || bytes.Equal(bytes.TrimSpace(override), []byte("null")) {
		return content, false, nil
	}
	var base, over map[string]json.RawMessage
	if err := json.Unmarshal(content, &base); err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(override, &over); err != nil {
		return nil, false, domain.Invalid("content", "content must be a JSON object of the fields to change")
	}
	changed := false
	for k, v := range over {
		if !bytes.Equal(base[k], v) {
			changed = true
		}
		base[k] = v
	}
	merged, err := json.Marshal(base)
	return merged, changed, err
}

// MaxReasonLength bounds a rejection or dismissal reason (characters).
const MaxReasonLength = 1000

// Resolve rejects or dismisses a pending suggestion, with an optional
// reason.
func (c *Pipeline) Resolve(ctx context.Context, meta domain.Metadata, id string, to processing.Status, reason string) (processing.Suggestion, error) {
	userID, err := userOf(meta)
	if err != nil {
		return processing.Suggestion{}, err
	}
	if n := utf8.RuneCountInString(reason); n > MaxReasonLength {
		return processing.Suggestion{}, domain.Invalid("reason", "reason has %d characters; the limit is %d", n, MaxReasonLength).WithDetail("limit", MaxReasonLength)
	}
	sg, err := c.pendingSuggestion(ctx, userID, id, to)
	if err != nil {
		return processing.Suggestion{}, err
	}
	defer c.lock(userID, sg.AgentID)()
	as, err := c.load(ctx, userID, sg.AgentID)
	if err != nil {
		return processing.Suggestion{}, err
	}
	now := c.now()
	if _, err := as.state.Resolve(id, to, now); err != nil {
		return processing.Suggestion{}, err
	}
	if err := c.appendTo(ctx, meta, as, []domain.Payload{processing.SuggestionResolved{AgentRef: as.ref, SuggestionID: id, Status: to, Reason: reason, ResolvedAt: now}}); err != nil {
		return processing.Suggestion{}, err
	}
	return c.suggestion(ctx, userID, id)
}
