package query

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/anxiety"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// agentState is an agent's processing state as its cognition stream holds
// it. stack is a published snapshot, shared with other calls: never change
// it.
type agentState struct {
	stack *processing.State
	ref   processing.AgentRef
}

// load returns the agent's state; an agent that does not exist, or is
// another user's, is not found.
func (s *Service) load(ctx context.Context, userID, agentID string) (agentState, error) {
	agent, ok, err := s.cfg.Memories.Agent(ctx, userID, agentID)
	if err != nil {
		return agentState{}, err
	}
	if !ok {
		return agentState{}, domain.NotFound("agent")
	}
	ref := processing.AgentRef{UserID: userID, AgentID: agentID, AgentCreatedAt: agent.CreatedAt}
	st, err := s.snapshots.Load(ctx, ref)
	if err != nil {
		return agentState{}, err
	}
	return agentState{stack: st, ref: ref}, nil
}

// sources lists the latest processing.SourceWindow live memories of type
// typ.
func (s *Service) sources(ctx context.Context, ref processing.AgentRef, typ memory.Type) ([]processing.Source, error) {
	page, err := s.cfg.Memories.ListMemories(ctx, memory.ListQuery{UserID: ref.UserID, AgentID: ref.AgentID, Types: []memory.Type{typ}, Limit: processing.SourceWindow})
	if err != nil {
		return nil, err
	}
	return processing.SourcesOf(page.Memories), nil
}

// promotedInto is what a source was made into (Stack.Processed), with each
// accepted suggestion replaced by its memory: accepting is recorded on the
// agent's memory stream, so the suggestions read model knows it and the
// cognition stream's fold does not (suggestions promoted by logs written
// before that are already replaced by the fold). Never nil.
func (s *Service) promotedInto(ctx context.Context, userID string, into []string) ([]string, error) {
	out := make([]string, 0, len(into))
	for _, ref := range into {
		if id, ok := strings.CutPrefix(ref, "suggestion:"); ok {
			sg, found, err := s.cfg.Suggestions.Suggestion(ctx, userID, id)
			if err != nil {
				return nil, err
			}
			if found && sg.PromotedTo != "" {
				ref = sg.PromotedTo
			}
		}
		if !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	return out, nil
}

// ProcessingView is an agent's pipeline: configuration, the processor
// the server runs, what each trigger sees now, and the latest passes.
type ProcessingView struct {
	Config    processing.Config         `json:"config"`
	Processor processorJSON             `json:"processor"`
	Triggers  []processing.TriggerState `json:"triggers"`
	Runs      []processing.Pass         `json:"runs"`
	Raw       RawProcessingState        `json:"raw"`
}

type processorJSON struct {
	Model     string `json:"model"`
	Inference bool   `json:"inference"`
}

// RawProcessingState counts an agent's raw entries by processed state
// (among the latest processing.SourceWindow) and shows the latest RawShown with what
// became of them.
type RawProcessingState struct {
	Processed   int        `json:"processed"`
	Unprocessed int        `json:"unprocessed"`
	Entries     []RawEntry `json:"entries"`
}

// RawEntry is a raw entry's processing state. ProcessedInto holds
// "suggestion:<id>" while a suggestion made from it is pending, and the
// memory's "type:id" once it was accepted.
type RawEntry struct {
	ID            string    `json:"id"`
	CreatedAt     time.Time `json:"created_at"`
	Processed     bool      `json:"processed"`
	ProcessedInto []string  `json:"processed_into"`
}

// RawShown is how many raw entries the processing view lists.
const RawShown = 100

// RunsShown is how many passes the processing view lists.
const RunsShown = 20

// Processing returns the agent's pipeline view.
func (s *Service) Processing(ctx context.Context, userID, agentID string) (ProcessingView, error) {
	as, err := s.load(ctx, userID, agentID)
	if err != nil {
		return ProcessingView{}, err
	}
	return s.view(ctx, as)
}

func (s *Service) view(ctx context.Context, as agentState) (ProcessingView, error) {
	now := s.now()
	info := s.cfg.Processor
	v := ProcessingView{Config: as.stack.Config, Processor: processorJSON{info.Model, info.Inference}, Runs: as.stack.Runs(RunsShown), Triggers: []processing.TriggerState{},
		Raw: RawProcessingState{Entries: []RawEntry{}}}
	bySource := map[memory.Type][]processing.Source{}
	for _, t := range processing.Transitions() {
		if _, ok := bySource[t.Source()]; !ok {
			srcs, err := s.sources(ctx, as.ref, t.Source())
			if err != nil {
				return ProcessingView{}, err
			}
			bySource[t.Source()] = srcs
		}
		v.Triggers = append(v.Triggers, processing.Trigger(t, as.stack.Config.Layers[t], as.stack.Unconsumed(t, bySource[t.Source()]), now))
	}
	v.Raw.Entries = []RawEntry{}
	for _, src := range bySource[memory.RawEntry] {
		consumed, into := as.stack.Processed(src.ID)
		done := consumed || src.ProcessedByClient
		if done {
			v.Raw.Processed++
		} else {
			v.Raw.Unprocessed++
		}
		if len(v.Raw.Entries) < RawShown {
			into, err := s.promotedInto(ctx, as.ref.UserID, into)
			if err != nil {
				return ProcessingView{}, err
			}
			v.Raw.Entries = append(v.Raw.Entries, RawEntry{ID: src.ID, CreatedAt: src.CreatedAt, Processed: done, ProcessedInto: into})
		}
	}
	return v, nil
}

// RawQuery selects a page of an agent's raw entries, newest first:
// Processed nil lists all, otherwise only the processed (true) or
// unprocessed (false). Cursor is the NextCursor of the previous page.
// Forgotten entries, and weak ones, are left out unless asked for.
type RawQuery struct {
	Processed        *bool
	Limit            int
	Cursor           string
	IncludeForgotten bool
	IncludeWeak      bool
}

// Limits of the raw entry listing.
const (
	DefaultRawLimit = 50
	MaxRawLimit     = 500
)

// RawEntryView is a raw entry with its processing state.
type RawEntryView struct {
	memory.View
	Processed     bool     `json:"processed"`
	ProcessedInto []string `json:"processed_into"`
}

// RawPage is one page of raw entries; NextCursor is empty on the last.
type RawPage struct {
	Entries    []RawEntryView
	NextCursor string
}

// RawEntries lists the agent's raw entries with their processing state and
// their strength now. The processed state and its filter come from the
// memories read model (View.Processed, the same one the stats count); what
// each entry became comes from the processing snapshot.
func (s *Service) RawEntries(ctx context.Context, userID, agentID string, q RawQuery) (RawPage, error) {
	as, err := s.load(ctx, userID, agentID)
	if err != nil {
		return RawPage{}, err
	}
	now := s.now()
	page, err := s.cfg.Memories.ListMemories(ctx, memory.ListQuery{UserID: userID, AgentID: agentID, Types: []memory.Type{memory.RawEntry},
		IncludeForgotten: q.IncludeForgotten, IncludeWeak: q.IncludeWeak, Processed: q.Processed, Now: now, Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return RawPage{}, err
	}
	out := RawPage{Entries: make([]RawEntryView, 0, len(page.Memories)), NextCursor: page.NextCursor}
	for _, v := range page.Memories {
		entry, err := s.rawEntryView(ctx, as, v, now)
		if err != nil {
			return RawPage{}, err
		}
		out.Entries = append(out.Entries, entry)
	}
	return out, nil
}

// rawEntryView is v with its strength at now and what it was made into.
func (s *Service) rawEntryView(ctx context.Context, as agentState, v memory.View, now time.Time) (RawEntryView, error) {
	v.ApplyStrength(now)
	_, into := as.stack.Processed(v.ID)
	into, err := s.promotedInto(ctx, as.ref.UserID, into)
	if err != nil {
		return RawEntryView{}, err
	}
	return RawEntryView{View: v, Processed: v.Processed, ProcessedInto: into}, nil
}

// RawEntry returns one raw entry of the agent with its processing state
// and its strength now; another agent's memory, or one of another type,
// is not found.
func (s *Service) RawEntry(ctx context.Context, userID, agentID, id string) (RawEntryView, error) {
	as, err := s.load(ctx, userID, agentID)
	if err != nil {
		return RawEntryView{}, err
	}
	v, found, err := s.cfg.Memories.Memory(ctx, userID, id)
	if err != nil {
		return RawEntryView{}, err
	}
	if !found || v.AgentID != agentID || v.Type != memory.RawEntry {
		return RawEntryView{}, domain.NotFound("raw entry")
	}
	return s.rawEntryView(ctx, as, v, s.now())
}

// Suggestions lists an agent's suggestions, newest first.
func (s *Service) Suggestions(ctx context.Context, userID, agentID string, status processing.Status, limit int) ([]processing.Suggestion, error) {
	if _, ok, err := s.cfg.Memories.Agent(ctx, userID, agentID); err != nil || !ok {
		if err == nil {
			err = domain.NotFound("agent")
		}
		return nil, err
	}
	now := s.now()
	list, err := s.cfg.Suggestions.ListSuggestions(ctx, processing.SuggestionQuery{UserID: userID, AgentID: agentID, Status: status, Now: now, Limit: limit})
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Status = list[i].StatusAt(now)
	}
	return list, nil
}

// Suggestion returns one suggestion of the user.
func (s *Service) Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, error) {
	sg, ok, err := s.cfg.Suggestions.Suggestion(ctx, userID, id)
	if err != nil {
		return processing.Suggestion{}, err
	}
	if !ok {
		return processing.Suggestion{}, domain.NotFound("suggestion")
	}
	sg.Status = sg.StatusAt(s.now())
	return sg, nil
}

// Anxiety computes the agent's anxiety report from the read models and
// the cognition stream; it writes nothing.
func (s *Service) Anxiety(ctx context.Context, userID, agentID string) (anxiety.Report, error) {
	as, err := s.load(ctx, userID, agentID)
	if err != nil {
		return anxiety.Report{}, err
	}
	now := s.now()
	page, err := s.cfg.Memories.ListMemories(ctx, memory.ListQuery{UserID: userID, AgentID: agentID, Limit: processing.AnxietyWindow})
	if err != nil {
		return anxiety.Report{}, err
	}
	pending, err := s.cfg.Suggestions.CountPending(ctx, userID, agentID, now)
	if err != nil {
		return anxiety.Report{}, err
	}
	return processing.AnxietyReport(as.stack, page.Memories, pending, now), nil
}
