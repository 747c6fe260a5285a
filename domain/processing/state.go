package processing

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Status is a suggestion's lifecycle state.
type Status string

// Suggestions start pending and end in exactly one of the others.
const (
	Pending   Status = "pending"
	Promoted  Status = "promoted"
	Modified  Status = "modified" // promoted with overrides
	Rejected  Status = "rejected"
	Dismissed Status = "dismissed"
	Expired   Status = "expired"
)

// ParseStatus accepts a status name.
func ParseStatus(field, s string) (Status, error) {
	for _, st := range []Status{Pending, Promoted, Modified, Rejected, Dismissed, Expired} {
		if string(st) == s {
			return st, nil
		}
	}
	return "", domain.Invalid(field, "%s must be one of pending, promoted, modified, rejected, dismissed, expired; got %q", field, s)
}

// Suggestion is a proposed memory awaiting (or past) a decision.
type Suggestion struct {
	ID          string          `json:"id"`
	AgentID     string          `json:"agent_id"`
	Transition  Transition      `json:"transition"`
	MemoryType  string          `json:"memory_type"`
	Content     json.RawMessage `json:"content"`
	Confidence  float64         `json:"confidence"`
	Sources     []string        `json:"sources"`
	Status      Status          `json:"status"`
	Fingerprint string          `json:"-"`
	CreatedAt   time.Time       `json:"created_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
	ResolvedAt  *time.Time      `json:"resolved_at"`
	Reason      string          `json:"resolution_reason,omitempty"`
	PromotedTo  string          `json:"promoted_to,omitempty"`
}

// StatusAt is the suggestion's status at now: a pending suggestion past
// its expiry reads as expired before any event records it, so reads need
// not write.
func (s Suggestion) StatusAt(now time.Time) Status {
	if s.Status == Pending && !now.Before(s.ExpiresAt) {
		return Expired
	}
	return s.Status
}

// Stack is the cognition state of one agent, folded from its stream.
type State struct {
	Version     int64 // of the stream; -1 when it does not exist
	Config      Config
	Suggestions map[string]*Suggestion
	// consumed[transition][source id] marks sources a transition processed.
	consumed map[Transition]map[string]bool
	// processedInto maps a source id to what was made of it.
	processedInto map[string][]string
	// promoted holds the "type:id" of every memory a pass recorded as
	// stored (or as purged since): an auto-promoted id is taken for good
	// once stored, even when its pass left its sources unprocessed.
	promoted map[string]bool
	// passDays counts passes that reached a processor, per transition and
	// UTC day ("2006-01-02").
	passDays       map[Transition]map[string]int
	agentCreatedAt time.Time
	// AnxietyLevel is the level last recorded (empty: none yet), at
	// AnxietyLevelAt.
	AnxietyLevel   string
	AnxietyLevelAt time.Time
	// runs holds the latest passes, oldest first; it is trimmed to
	// RecentRuns only when it doubles, so folding stays linear.
	runs []PassRecorded
}

// RecentRuns is how many passes a Stack keeps for display.
const RecentRuns = 50

// NewStack is the state of an agent with no cognition events.
func NewState() *State {
	return &State{
		Version: -1, Config: DefaultConfig(), Suggestions: map[string]*Suggestion{},
		consumed: map[Transition]map[string]bool{}, processedInto: map[string][]string{}, promoted: map[string]bool{},
		passDays: map[Transition]map[string]int{},
	}
}

// Fold builds the state of the agent created at agentCreatedAt from its
// stream's events; events of an earlier, deleted agent of the same name
// are skipped.
func Fold(events []domain.Event, agentCreatedAt time.Time) (*State, error) {
	s := NewStateOf(agentCreatedAt)
	if err := s.ApplyAll(events); err != nil {
		return nil, err
	}
	return s, nil
}

// NewStackOf is the state of the agent created at agentCreatedAt before
// any cognition event: events of an earlier agent of the same id are
// ignored.
func NewStateOf(agentCreatedAt time.Time) *State {
	s := NewState()
	s.agentCreatedAt = agentCreatedAt
	return s
}

// Clone returns a copy of s that can be advanced (Apply) without changing
// s, so a state that readers share is never written: maps are copied,
// and slices are clipped so that appending to the copy's reallocates.
func (s *State) Clone() *State {
	c := *s
	c.Config.Layers = maps.Clone(s.Config.Layers)
	c.Suggestions = make(map[string]*Suggestion, len(s.Suggestions))
	for id, sg := range s.Suggestions {
		cp := *sg
		c.Suggestions[id] = &cp
	}
	c.consumed = make(map[Transition]map[string]bool, len(s.consumed))
	for t, ids := range s.consumed {
		c.consumed[t] = maps.Clone(ids)
	}
	c.processedInto = make(map[string][]string, len(s.processedInto))
	for id, into := range s.processedInto {
		c.processedInto[id] = slices.Clip(into)
	}
	c.promoted = maps.Clone(s.promoted)
	c.passDays = make(map[Transition]map[string]int, len(s.passDays))
	for t, days := range s.passDays {
		c.passDays[t] = maps.Clone(days)
	}
	c.runs = slices.Clip(s.runs)
	return &c
}

// ApplyAll advances the state by the stream's events that follow
// s.Version, in order: applying a stream in several parts gives the same
// state as folding it at once.
func (s *State) ApplyAll(events []domain.Event) error {
	for _, e := range events {
		if err := s.Apply(e); err != nil {
			return err
		}
		s.Version = int64(e.Version)
	}
	return nil
}

// events decodes the cognition events State folds; it never changes.
var events = domain.MustEventRegistry(Events())

// decode returns the payload of a cognition event, nil for other events
// (an event decoded already, by the projections' registry, is not decoded
// again, and one of another package's types that did not decode is none
// of State's business).
func decode(e domain.Event) (interface{ ref() AgentRef }, error) {
	payload, err := events.Decode(e).Decoded()
	if err != nil {
		if !events.Knows(e.Type) {
			return nil, nil
		}
		return nil, fmt.Errorf("processing: %w", err)
	}
	p, _ := payload.(interface{ ref() AgentRef })
	return p, nil
}

// Apply changes the state by one event of this agent's stream.
func (s *State) Apply(e domain.Event) error {
	payload, err := decode(e)
	if err != nil || payload == nil {
		return err
	}
	if !payload.ref().AgentCreatedAt.Equal(s.agentCreatedAt) {
		return nil
	}
	switch p := payload.(type) {
	case *ConfigChanged:
		s.Config = p.Config
	case *PassRecorded:
		s.applyPass(*p)
	case *SuggestionCreated:
		s.Suggestions[p.SuggestionID] = &Suggestion{
			ID: p.SuggestionID, AgentID: p.AgentID, Transition: p.Transition, MemoryType: p.MemoryType, Content: p.Content,
			Confidence: p.Confidence, Sources: p.Sources, Status: Pending, Fingerprint: p.Fingerprint,
			CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt, Reason: LintReason(p.LintFailure),
		}
	case *SuggestionResolved:
		s.applyResolved(*p)
	case *AnxietyLevelRecorded:
		s.AnxietyLevel, s.AnxietyLevelAt = p.Level, p.At
	}
	return nil
}

func (s *State) applyPass(p PassRecorded) {
	s.runs = append(s.runs, p)
	if len(s.runs) >= 2*RecentRuns {
		s.runs = append(s.runs[:0:0], s.runs[len(s.runs)-RecentRuns:]...)
	}
	if !p.Skipped {
		day := p.At.UTC().Format(time.DateOnly)
		if s.passDays[p.Transition] == nil {
			s.passDays[p.Transition] = map[string]int{}
		}
		s.passDays[p.Transition][day]++
	}
	if s.consumed[p.Transition] == nil {
		s.consumed[p.Transition] = map[string]bool{}
	}
	for _, c := range p.Consumed {
		s.consumed[p.Transition][c.ID] = true
		s.processedInto[c.ID] = appendNew(s.processedInto[c.ID], c.Into...)
	}
	for _, made := range slices.Concat(p.Created, p.Purged) {
		s.promoted[made] = true
	}
}

// Promoted reports whether a pass recorded made ("type:id") as a memory
// it stored, or as one an earlier pass stored and a purge removed since.
func (s *State) Promoted(made string) bool { return s.promoted[made] }

func (s *State) applyResolved(p SuggestionResolved) {
	sg := s.Suggestions[p.SuggestionID]
	if sg == nil {
		return
	}
	at := p.ResolvedAt
	sg.Status, sg.Reason, sg.PromotedTo, sg.ResolvedAt = p.Status, p.Reason, p.PromotedTo, &at
	if p.PromotedTo == "" {
		return
	}
	// The memory replaces the suggestion in what its sources became.
	ref := "suggestion:" + sg.ID
	for _, src := range sg.Sources {
		id := refID(src)
		into := s.processedInto[id][:0:0]
		for _, r := range s.processedInto[id] {
			if r != ref {
				into = append(into, r)
			}
		}
		s.processedInto[id] = appendNew(into, p.PromotedTo)
	}
}

// Runs returns up to n of the latest passes, newest first.
func (s *State) Runs(n int) []Pass {
	n = min(n, RecentRuns, len(s.runs))
	out := make([]Pass, n)
	for i := range out {
		out[i] = s.runs[len(s.runs)-1-i].Pass
	}
	return out
}

// Consumed reports whether transition t already processed source id.
func (s *State) Consumed(t Transition, id string) bool { return s.consumed[t][id] }

// Processed reports whether any transition processed source id, and what
// was made of it ("suggestion:<id>" while pending, the memory's
// "type:id" once promoted).
func (s *State) Processed(id string) (bool, []string) {
	for _, c := range s.consumed {
		if c[id] {
			return true, append([]string{}, s.processedInto[id]...)
		}
	}
	return false, nil
}

// PassesOn counts t's passes that reached a processor on now's UTC day.
func (s *State) PassesOn(t Transition, now time.Time) int {
	return s.passDays[t][now.UTC().Format(time.DateOnly)]
}

// PendingFingerprints maps the fingerprints of suggestions pending at now
// to their ids.
func (s *State) PendingFingerprints(now time.Time) map[string]string {
	out := map[string]string{}
	for _, sg := range s.Suggestions {
		if sg.StatusAt(now) == Pending {
			out[sg.Fingerprint] = sg.ID
		}
	}
	return out
}

// DueToExpire lists, in id order, the suggestions still recorded as
// pending whose expiry has passed at now.
func (s *State) DueToExpire(now time.Time) []string {
	var ids []string
	for id, sg := range s.Suggestions {
		if sg.Status == Pending && sg.StatusAt(now) == Expired {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Resolve decides a suggestion's move out of pending: only a suggestion
// pending at now can move, and only to a final status.
func (s *State) Resolve(id string, to Status, now time.Time) (*Suggestion, error) {
	sg := s.Suggestions[id]
	if sg == nil {
		return nil, domain.NotFound("suggestion")
	}
	if st := sg.StatusAt(now); st != Pending {
		return nil, domain.Conflict("suggestion_not_pending", "suggestion %s is %s; only pending suggestions can be %s", id, st, to)
	}
	if to == Pending {
		return nil, domain.Invalid("status", "a suggestion cannot return to pending")
	}
	return sg, nil
}

func refID(ref string) string {
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == ':' {
			return ref[i+1:]
		}
	}
	return ref
}

func appendNew(list []string, refs ...string) []string {
	for _, r := range refs {
		dup := false
		for _, x := range list {
			if x == r {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, r)
		}
	}
	return list
}

// SuggestionQuery selects an agent's suggestions, newest first. Status ""
// lists all; expiry is judged at Now.
type SuggestionQuery struct {
	UserID, AgentID string
	Status          Status
	Now             time.Time
	Limit           int
}

// Limits of suggestion listing.
const (
	DefaultSuggestionLimit = 50
	MaxSuggestionLimit     = 500
)

// LintReason is the resolution_reason a lint failure leaves on a pending
// suggestion.
func LintReason(failure string) string {
	if failure == "" {
		return ""
	}
	return "lint_failed: " + failure
}
