package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// StackSettings is an agent's settings (GET/PATCH /agents/{id}/settings).
type StackSettings struct {
	AgentID           string         `json:"agent_id"`
	StackState        string         `json:"stack_state"` // initializing, active or maintenance
	EnforceProvenance bool           `json:"enforce_provenance"`
	LazyDecay         bool           `json:"lazy_decay"`
	LintRules         LintRules      `json:"lint_rules"`
	PromotionGates    PromotionGates `json:"promotion_gates"`
	UpdatedAt         *time.Time     `json:"updated_at"` // nil while the defaults hold
}

// LintRules are the checks beliefs and values pass before auto-promotion.
type LintRules struct {
	Enabled              bool `json:"enabled"`
	MinLength            int  `json:"min_length"`
	MaxLength            int  `json:"max_length"`
	CheckFragments       bool `json:"check_fragments"`
	CheckPrefixArtifacts bool `json:"check_prefix_artifacts"`
	CheckTemplatedNoise  bool `json:"check_templated_noise"`
}

// PromotionGates are what processed beliefs and values need.
type PromotionGates struct {
	BeliefMinEvidence       int     `json:"belief_min_evidence"`
	BeliefMinConfidence     float64 `json:"belief_min_confidence"`
	ValueMinEvidence        int     `json:"value_min_evidence"`
	ValueRequiresProtection bool    `json:"value_requires_protection"`
}

// Settings reads the agent's settings.
func (c *Client) Settings(ctx context.Context, agentID string) (*StackSettings, error) {
	var out StackSettings
	err := c.call(ctx, http.MethodGet, "/agents/"+pathID(agentID)+"/settings", nil, nil, &out, bearer)
	return ret(&out, err)
}

// PatchSettings changes some settings: patch is a JSON merge object, e.g.
// map[string]any{"stack_state": "maintenance", "lint_rules":
// map[string]any{"min_length": 5}}; the others keep their value.
func (c *Client) PatchSettings(ctx context.Context, agentID string, patch any) (*StackSettings, error) {
	var out StackSettings
	err := c.call(ctx, http.MethodPatch, "/agents/"+pathID(agentID)+"/settings", nil, patch, &out, bearer)
	return ret(&out, err)
}

// ProvenanceNode is one memory of a provenance tree.
type ProvenanceNode struct {
	Type      string            `json:"type"`
	ID        string            `json:"id"`
	Depth     int               `json:"depth"`
	Cycle     bool              `json:"cycle"`
	Truncated bool              `json:"truncated"` // more beyond the depth asked for
	Nodes     []*ProvenanceNode `json:"nodes"`
}

// Provenance is the data of GET /memories/{id}/provenance: Up (what the
// memory was derived from) and Down (what was derived from it) are nil
// when not asked for.
type Provenance struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Direction string          `json:"direction"`
	Depth     int             `json:"depth"`
	Up        *ProvenanceNode `json:"up"`
	Down      *ProvenanceNode `json:"down"`
}

// ProvenanceOptions select the tree; zero values are the server's
// defaults (both directions, its default depth).
type ProvenanceOptions struct {
	Direction string // up, down or both
	Depth     int
}

// Provenance reads a memory's provenance tree.
func (c *Client) Provenance(ctx context.Context, id string, opts ProvenanceOptions) (*Provenance, error) {
	q := url.Values{}
	if opts.Direction != "" {
		q.Set("direction", opts.Direction)
	}
	if opts.Depth != 0 {
		q.Set("depth", strconv.Itoa(opts.Depth))
	}
	var out Provenance
	err := c.call(ctx, http.MethodGet, "/memories/"+pathID(id)+"/provenance", q, nil, &out, bearer)
	return ret(&out, err)
}

// StrengthChange is the optional body of WeakenMemory and VerifyMemory.
type StrengthChange struct {
	By     *float64 `json:"by,omitempty"` // weaken only: (0, 1], default 0.1
	Reason string   `json:"reason,omitempty"`
	// IfMatch, when set (Memory.ETag()), acts only on that version.
	IfMatch string `json:"-"`
}

// RecoverMemory brings a forgotten memory back (weak, searchable again).
// ifMatch ("" for none) makes it conditional on the memory's version.
func (c *Client) RecoverMemory(ctx context.Context, id, ifMatch string) (*Memory, error) {
	return c.memoryAction(ctx, id, "recover", ifMatch, nil)
}

// ProtectMemory freezes a memory's strength: no decay, no forgetting.
func (c *Client) ProtectMemory(ctx context.Context, id, ifMatch string) (*Memory, error) {
	return c.memoryAction(ctx, id, "protect", ifMatch, nil)
}

// UnprotectMemory lets a protected memory decay again.
func (c *Client) UnprotectMemory(ctx context.Context, id, ifMatch string) (*Memory, error) {
	return c.memoryAction(ctx, id, "unprotect", ifMatch, nil)
}

// WeakenMemory lowers a memory's strength.
func (c *Client) WeakenMemory(ctx context.Context, id string, change StrengthChange) (*Memory, error) {
	return c.memoryAction(ctx, id, "weaken", change.IfMatch, change)
}

// VerifyMemory records that a memory still holds: its strength rises.
func (c *Client) VerifyMemory(ctx context.Context, id string, change StrengthChange) (*Memory, error) {
	return c.memoryAction(ctx, id, "verify", change.IfMatch, change)
}

func (c *Client) memoryAction(ctx context.Context, id, action, ifMatch string, body any) (*Memory, error) {
	var out Memory
	err := c.callWithHeader(ctx, http.MethodPost, "/memories/"+pathID(id)+"/"+action, nil, ifMatchHeader(ifMatch), body, &out, bearer)
	return ret(&out, err)
}

// Pass is one transition of one processing run, as recorded.
type Pass struct {
	PassID           string     `json:"pass_id"`
	Transition       string     `json:"transition"`
	Model            string     `json:"model"`
	Forced           bool       `json:"forced"`
	AutoPromote      bool       `json:"auto_promote"`
	At               time.Time  `json:"at"`
	Skipped          bool       `json:"skipped"`
	SkipReason       string     `json:"skip_reason"`
	SkipDetail       string     `json:"skip_detail"`
	InferenceBlocked bool       `json:"inference_blocked"`
	SourceCount      int        `json:"source_count"`
	Consumed         []Consumed `json:"consumed"`
	Suggestions      []string   `json:"suggestions"` // suggestion ids
	Created          []string   `json:"created"`     // "type:id" of memories written
	Deduplicated     int        `json:"deduplicated"`
	GateBlocked      int        `json:"gate_blocked"`
	GateDetails      []string   `json:"gate_details"`
	Errors           []string   `json:"errors"`
	// Purged are the "type:id" of items an earlier attempt of the pass
	// stored and a purge removed since: not written again, their sources
	// consumed.
	Purged []string `json:"purged,omitempty"`
}

// Consumed is a source a pass processed and what was made of it.
type Consumed struct {
	ID   string   `json:"id"`
	Into []string `json:"into"`
}

// ProcessRequest is the optional body of POST /agents/{id}/process.
type ProcessRequest struct {
	Force      bool   `json:"force,omitempty"`
	Transition string `json:"transition,omitempty"` // one transition; empty runs all in order
}

// Process runs a processing pass and returns one Pass per transition.
func (c *Client) Process(ctx context.Context, agentID string, req ProcessRequest) ([]Pass, error) {
	var out struct {
		Passes []Pass `json:"passes"`
	}
	if err := c.call(ctx, http.MethodPost, "/agents/"+pathID(agentID)+"/process", nil, req, &out, bearer); err != nil {
		return nil, err
	}
	return out.Passes, nil
}

// ExhaustRequest is the optional body of POST
// /agents/{id}/process/exhaust; zero values are the server's defaults (20
// cycles, auto-promote on).
type ExhaustRequest struct {
	MaxCycles   int   `json:"max_cycles,omitempty"`
	AutoPromote *bool `json:"auto_promote,omitempty"`
}

// ExhaustCycle is one cycle of an exhaust run.
type ExhaustCycle struct {
	Cycle            int    `json:"cycle"`
	Intensity        string `json:"intensity"` // light, medium or heavy
	Sources          int    `json:"sources"`
	Promotions       int    `json:"promotions"`
	Suggestions      int    `json:"suggestions"`
	Errors           int    `json:"errors"`
	InferenceBlocked bool   `json:"inference_blocked"`
	Passes           []Pass `json:"passes"`
}

// ExhaustResult is what an exhaust run did. ConvergenceReason is
// "converged", "inference_unavailable", "max_cycles" or
// "concurrent_processing".
type ExhaustResult struct {
	CyclesCompleted   int            `json:"cycles_completed"`
	TotalPromotions   int            `json:"total_promotions"`
	TotalSuggestions  int            `json:"total_suggestions"`
	Converged         bool           `json:"converged"`
	ConvergenceReason string         `json:"convergence_reason"`
	AutoPromote       bool           `json:"auto_promote"`
	Cycles            []ExhaustCycle `json:"cycles"`
	// Error is, with ConvergenceReason "cycle_failed", why the cycle
	// after the listed ones failed (the listed ones are stored).
	Error *CycleFailure `json:"error,omitempty"`
}

// CycleFailure is a failed exhaust cycle's error, in the failure
// envelope's shape.
type CycleFailure struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details,omitempty"`
}

// Exhaust processes the agent until nothing more comes of it.
func (c *Client) Exhaust(ctx context.Context, agentID string, req ExhaustRequest) (*ExhaustResult, error) {
	var out ExhaustResult
	err := c.call(ctx, http.MethodPost, "/agents/"+pathID(agentID)+"/process/exhaust", nil, req, &out, bearer)
	return ret(&out, err)
}

// Layer is one transition's processing configuration.
type Layer struct {
	Enabled            bool    `json:"enabled"`
	Model              string  `json:"model"`
	QuantityThreshold  int     `json:"quantity_threshold"`
	ValenceThreshold   float64 `json:"valence_threshold"`
	TimeThresholdHours float64 `json:"time_threshold_hours"`
	BatchSize          int     `json:"batch_size"`
	MaxPassesPerDay    int     `json:"max_passes_per_day"`
}

// ProcessingConfig is an agent's processing configuration.
type ProcessingConfig struct {
	Layers                map[string]Layer `json:"layers"`
	AutoPromote           bool             `json:"auto_promote"`
	SuggestionExpiryHours int              `json:"suggestion_expiry_hours"`
}

// Trigger is what a transition's triggers see now.
type Trigger struct {
	Transition  string  `json:"transition"`
	Unprocessed int     `json:"unprocessed"`
	ArousalSum  float64 `json:"arousal_sum"`
	OldestHours float64 `json:"oldest_hours"`
	Fires       bool    `json:"fires"`
	Reason      string  `json:"reason"`
}

// RawState is a raw entry's processing state in the processing view.
type RawState struct {
	ID            string    `json:"id"`
	CreatedAt     time.Time `json:"created_at"`
	Processed     bool      `json:"processed"`
	ProcessedInto []string  `json:"processed_into"`
}

// ProcessingView is the data of GET /agents/{id}/processing.
type ProcessingView struct {
	Config    ProcessingConfig `json:"config"`
	Processor struct {
		Model     string `json:"model"`
		Inference bool   `json:"inference"`
	} `json:"processor"`
	Triggers []Trigger `json:"triggers"`
	Runs     []Pass    `json:"runs"` // newest first
	Raw      struct {
		Processed   int        `json:"processed"`
		Unprocessed int        `json:"unprocessed"`
		Entries     []RawState `json:"entries"`
	} `json:"raw"`
}

// Processing reads the agent's processing view.
func (c *Client) Processing(ctx context.Context, agentID string) (*ProcessingView, error) {
	var out ProcessingView
	err := c.call(ctx, http.MethodGet, "/agents/"+pathID(agentID)+"/processing", nil, nil, &out, bearer)
	return ret(&out, err)
}

// LayerPatch changes some fields of one layer; nil fields keep their value.
type LayerPatch struct {
	Enabled            *bool    `json:"enabled,omitempty"`
	Model              *string  `json:"model,omitempty"`
	QuantityThreshold  *int     `json:"quantity_threshold,omitempty"`
	ValenceThreshold   *float64 `json:"valence_threshold,omitempty"`
	TimeThresholdHours *float64 `json:"time_threshold_hours,omitempty"`
	BatchSize          *int     `json:"batch_size,omitempty"`
	MaxPassesPerDay    *int     `json:"max_passes_per_day,omitempty"`
}

// ProcessingPatch is the body of PATCH /agents/{id}/processing; nil
// fields keep their value.
type ProcessingPatch struct {
	AutoPromote           *bool                 `json:"auto_promote,omitempty"`
	SuggestionExpiryHours *int                  `json:"suggestion_expiry_hours,omitempty"`
	Layers                map[string]LayerPatch `json:"layers,omitempty"`
}

// PatchProcessing changes the agent's processing configuration.
func (c *Client) PatchProcessing(ctx context.Context, agentID string, patch ProcessingPatch) (*ProcessingView, error) {
	var out ProcessingView
	err := c.call(ctx, http.MethodPatch, "/agents/"+pathID(agentID)+"/processing", nil, patch, &out, bearer)
	return ret(&out, err)
}

// RawEntry is a raw entry with its processing state (GET
// /agents/{id}/raw).
type RawEntry struct {
	Memory
	Processed     bool     `json:"processed"`
	ProcessedInto []string `json:"processed_into"`
}

// RawEntriesOptions select raw entries; zero values are the server's
// defaults (all, 50).
type RawEntriesOptions struct {
	Processed *bool // nil: both
	Limit     int
}

// RawEntries lists the agent's raw entries, newest first.
func (c *Client) RawEntries(ctx context.Context, agentID string, opts RawEntriesOptions) ([]RawEntry, error) {
	q := url.Values{}
	if opts.Processed != nil {
		q.Set("processed", strconv.FormatBool(*opts.Processed))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var out struct {
		RawEntries []RawEntry `json:"raw_entries"`
	}
	if err := c.call(ctx, http.MethodGet, "/agents/"+pathID(agentID)+"/raw", q, nil, &out, bearer); err != nil {
		return nil, err
	}
	return out.RawEntries, nil
}

// Suggestion is a memory processing proposed. Status is pending,
// promoted, modified, rejected, dismissed or expired.
type Suggestion struct {
	ID         string          `json:"id"`
	AgentID    string          `json:"agent_id"`
	Transition string          `json:"transition"`
	MemoryType string          `json:"memory_type"`
	Content    json.RawMessage `json:"content"`
	Confidence float64         `json:"confidence"`
	Sources    []string        `json:"sources"`
	Status     string          `json:"status"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	ResolvedAt *time.Time      `json:"resolved_at"`
	Reason     string          `json:"resolution_reason"`
	PromotedTo string          `json:"promoted_to"`
}

// SuggestionsOptions select suggestions; zero values are the server's
// defaults (every status, 50).
type SuggestionsOptions struct {
	Status string
	Limit  int
}

// Suggestions lists the agent's suggestions, newest first.
func (c *Client) Suggestions(ctx context.Context, agentID string, opts SuggestionsOptions) ([]Suggestion, error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", opts.Status)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var out struct {
		Suggestions []Suggestion `json:"suggestions"`
	}
	if err := c.call(ctx, http.MethodGet, "/agents/"+pathID(agentID)+"/suggestions", q, nil, &out, bearer); err != nil {
		return nil, err
	}
	return out.Suggestions, nil
}

// Suggestion reads one suggestion.
func (c *Client) Suggestion(ctx context.Context, id string) (*Suggestion, error) {
	var out Suggestion
	err := c.call(ctx, http.MethodGet, "/suggestions/"+pathID(id), nil, nil, &out, bearer)
	return ret(&out, err)
}

// AcceptOptions override what an accepted suggestion becomes: Content
// fields replace the suggested ones (the status becomes "modified").
type AcceptOptions struct {
	Content any      `json:"content,omitempty"`
	Tags    []string `json:"tags,omitempty"`
}

// Accepted is the data of POST /suggestions/{id}/accept.
type Accepted struct {
	Suggestion Suggestion    `json:"suggestion"`
	Memory     CreatedMemory `json:"memory"`
}

// AcceptSuggestion creates the memory a pending suggestion proposes.
func (c *Client) AcceptSuggestion(ctx context.Context, id string, opts AcceptOptions) (*Accepted, error) {
	var body any
	if opts.Content != nil || opts.Tags != nil {
		body = opts
	}
	var out Accepted
	err := c.call(ctx, http.MethodPost, "/suggestions/"+pathID(id)+"/accept", nil, body, &out, bearer)
	return ret(&out, err)
}

// RejectSuggestion marks a pending suggestion rejected; reason may be "".
func (c *Client) RejectSuggestion(ctx context.Context, id, reason string) (*Suggestion, error) {
	return c.resolveSuggestion(ctx, id, "reject", reason)
}

// DismissSuggestion marks a pending suggestion dismissed; reason may be "".
func (c *Client) DismissSuggestion(ctx context.Context, id, reason string) (*Suggestion, error) {
	return c.resolveSuggestion(ctx, id, "dismiss", reason)
}

func (c *Client) resolveSuggestion(ctx context.Context, id, verb, reason string) (*Suggestion, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var out Suggestion
	err := c.call(ctx, http.MethodPost, "/suggestions/"+pathID(id)+"/"+verb, nil, body, &out, bearer)
	return ret(&out, err)
}

// AnxietyDimension is one dimension of an anxiety report.
type AnxietyDimension struct {
	Score      int     `json:"score"`
	Confidence float64 `json:"confidence"`
	RawValue   float64 `json:"raw_value"`
	Detail     string  `json:"detail"`
	Weight     float64 `json:"weight"`
}

// AnxietyLevel is a level recorded for an agent, and when.
type AnxietyLevel struct {
	Level string    `json:"level"`
	At    time.Time `json:"at"`
}

// AnxietyReport is the data of GET /agents/{id}/anxiety. OverallLevel is
// the band of the score; HysteresisLevel walks from PreviousLevel (the
// level last recorded by processing; nil if none).
type AnxietyReport struct {
	OverallScore      int                         `json:"overall_score"`
	OverallLevel      string                      `json:"overall_level"`
	OverallConfidence float64                     `json:"overall_confidence"`
	PreviousLevel     *AnxietyLevel               `json:"previous_level"`
	HysteresisLevel   string                      `json:"hysteresis_level"`
	Dimensions        map[string]AnxietyDimension `json:"dimensions"`
	Recommendations   []struct {
		Priority    string `json:"priority"`
		Dimension   string `json:"dimension"`
		Description string `json:"description"`
	} `json:"recommendations"`
	ComputedAt time.Time `json:"computed_at"`
}

// Anxiety reads the agent's anxiety report.
func (c *Client) Anxiety(ctx context.Context, agentID string) (*AnxietyReport, error) {
	var out AnxietyReport
	err := c.call(ctx, http.MethodGet, "/agents/"+pathID(agentID)+"/anxiety", nil, nil, &out, bearer)
	return ret(&out, err)
}

// AuditEntry is one entry of an audit trail.
type AuditEntry struct {
	ID         string          `json:"id"`
	At         time.Time       `json:"at"`
	Operation  string          `json:"operation"`
	AgentID    string          `json:"agent_id"`
	MemoryType string          `json:"memory_type"`
	MemoryID   string          `json:"memory_id"`
	Actor      string          `json:"actor"`
	Details    json.RawMessage `json:"details"`
}

// AuditPage is one page of an audit trail, newest first; NextBefore is
// the Before of the next page, "" on the last.
type AuditPage struct {
	Entries    []AuditEntry `json:"entries"`
	NextBefore string       `json:"next_before"`
}

// AuditOptions select a page; zero values are the server's defaults.
type AuditOptions struct {
	Limit  int
	Before string
}

// AgentAudit reads a page of the agent's audit trail.
func (c *Client) AgentAudit(ctx context.Context, agentID string, opts AuditOptions) (*AuditPage, error) {
	return c.audit(ctx, "/agents/"+pathID(agentID)+"/audit", opts)
}

// AccountAudit reads a page of the account's own audit trail (keys,
// sessions, agent deletions).
func (c *Client) AccountAudit(ctx context.Context, opts AuditOptions) (*AuditPage, error) {
	return c.audit(ctx, "/audit", opts)
}

func (c *Client) audit(ctx context.Context, path string, opts AuditOptions) (*AuditPage, error) {
	q := url.Values{}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Before != "" {
		q.Set("before", opts.Before)
	}
	var out AuditPage
	err := c.call(ctx, http.MethodGet, path, q, nil, &out, bearer)
	return ret(&out, err)
}

// Stats is the data of GET /agents/{id}/stats.
type Stats struct {
	AgentID         string         `json:"agent_id"`
	Total           int            `json:"total"`
	ByType          map[string]int `json:"by_type"`
	Forgotten       int            `json:"forgotten"`
	ForgottenByType map[string]int `json:"forgotten_by_type"`
	Weak            int            `json:"weak"`
	Raw             struct {
		Processed   int `json:"processed"`
		Unprocessed int `json:"unprocessed"`
	} `json:"raw"`
	Suggestions map[string]int `json:"suggestions"` // by status
}

// Stats counts what the agent holds.
func (c *Client) Stats(ctx context.Context, agentID string) (*Stats, error) {
	var out Stats
	err := c.call(ctx, http.MethodGet, "/agents/"+pathID(agentID)+"/stats", nil, nil, &out, bearer)
	return ret(&out, err)
}
