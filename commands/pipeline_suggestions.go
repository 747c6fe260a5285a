package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/anxiety"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// Suggestions lists an agent's suggestions, newest first.
func (c *Pipeline) Suggestions(ctx context.Context, userID, agentID string, status processing.Status, limit int) ([]processing.Suggestion, error) {
	if _, ok, err := c.cfg.Memories.Agent(ctx, userID, agentID); err != nil || !ok {
		if err == nil {
			err = domain.NotFound("agent")
		}
		return nil, err
	}
	now := c.now()
	list, err := c.cfg.Suggestions.ListSuggestions(ctx, processing.SuggestionQuery{UserID: userID, AgentID: agentID, Status: status, Now: now, Limit: limit})
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Status = list[i].StatusAt(now)
	}
	return list, nil
}

// Suggestion returns one suggestion of the user.
func (c *Pipeline) Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, error) {
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
	sg, err = c.Suggestion(ctx, userID, id)
	return Accepted{Suggestion: sg, Memory: made}, err
}

// pendingSuggestion returns the user's suggestion if it is pending now,
// as the suggestions read model shows it (which sees promotions, recorded
// on the agent's memory stream, as well as the cognition stream's
// resolutions); otherwise a conflict naming its status.
func (c *Pipeline) pendingSuggestion(ctx context.Context, userID, id string, to processing.Status) (processing.Suggestion, error) {
	sg, err := c.Suggestion(ctx, userID, id)
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
	if _, err := as.stack.Resolve(id, to, now); err != nil {
		return processing.Suggestion{}, err
	}
	if err := c.appendTo(ctx, meta, as, []domain.Payload{processing.SuggestionResolved{StackRef: as.ref, SuggestionID: id, Status: to, Reason: reason, ResolvedAt: now}}); err != nil {
		return processing.Suggestion{}, err
	}
	return c.Suggestion(ctx, userID, id)
}

// AnxietyWindow is how many of the agent's latest memories the anxiety
// report reads.
const AnxietyWindow = memory.MaxListLimit

// Anxiety computes the agent's anxiety report from the read models and
// the cognition stream; it writes nothing.
func (c *Pipeline) Anxiety(ctx context.Context, userID, agentID string) (anxiety.Report, error) {
	as, err := c.load(ctx, userID, agentID)
	if err != nil {
		return anxiety.Report{}, err
	}
	return c.anxietyReport(ctx, as)
}

// anxietyReport computes the report of a loaded agent; its hysteresis
// starts from the level the agent's stream last recorded.
func (c *Pipeline) anxietyReport(ctx context.Context, as agentStack) (anxiety.Report, error) {
	userID, agentID := as.ref.UserID, as.ref.AgentID
	now := c.now()
	page, err := c.cfg.Memories.ListMemories(ctx, memory.ListQuery{UserID: userID, AgentID: agentID, Limit: AnxietyWindow})
	if err != nil {
		return anxiety.Report{}, err
	}
	in := anxiety.Inputs{Now: now}
	if as.stack.AnxietyLevel != "" {
		in.Previous = &anxiety.Observation{Level: as.stack.AnxietyLevel, At: as.stack.AnxietyLevelAt}
	}
	if in.PendingSuggestions, err = c.cfg.Suggestions.CountPending(ctx, userID, agentID, now); err != nil {
		return anxiety.Report{}, err
	}
	for _, v := range page.Memories {
		var f struct {
			Lessons    []string `json:"lessons"`
			Confidence *float64 `json:"confidence"`
			Priority   *int     `json:"priority"`
			Status     string   `json:"status"`
			Content    string   `json:"content"`
		}
		_ = json.Unmarshal(v.Content, &f) // read-model content is canonical JSON
		switch v.Type {
		case memory.Episode:
			in.Episodes = append(in.Episodes, anxiety.Episode{HasLessons: len(f.Lessons) > 0, Checkpoint: hasTag(v.Tags, "checkpoint")})
		case memory.Belief:
			conf := 0.0
			if f.Confidence != nil {
				conf = *f.Confidence
			}
			in.BeliefConfs = append(in.BeliefConfs, conf)
		case memory.RawEntry:
			if !v.Processed {
				in.UnprocessedRaw = append(in.UnprocessedRaw, anxiety.Raw{Length: utf8.RuneCountInString(f.Content), CapturedAt: v.CreatedAt})
			}
		case memory.Value:
			p := 50
			if f.Priority != nil {
				p = *f.Priority
			}
			in.ValuePriorities = append(in.ValuePriorities, p)
		case memory.Goal:
			if f.Status == "" || f.Status == "active" {
				in.ActiveGoals++
			}
		case memory.Drive:
			in.Drives++
		case memory.Relationship:
			in.Relationships++
		}
		if v.Type.Searchable() {
			in.Searchable++
			if v.Embedding.Status == memory.StatusPending {
				in.EmbedPending++
			}
		}
	}
	return anxiety.Compute(in), nil
}

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}
