package commands

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// PipelineConfig wires Pipeline.
type PipelineConfig struct {
	Writer      *EventWriter        // required
	Memories    MemoryReadModel     // required
	Suggestions SuggestionReadModel // required
	Creator     MemoryCreator       // required
	Processor   Processor           // required: a chat model, or the rule extractor
	Now         func() time.Time    // default time.Now
	Logger      *slog.Logger        // nil discards
}

// Pipeline runs the processing pipeline and the suggestion lifecycle of
// each agent, and records its anxiety level. The decisions fold the agent's
// cognition stream (processing.State) and append at its version; within
// one server, the commands of one agent are serialized so that a pass and
// an accept never decide on the same state.
type Pipeline struct {
	cfg       PipelineConfig
	logger    *slog.Logger
	locks     [userLockStripes]sync.Mutex
	snapshots *processing.Snapshots
}

// NewPipeline checks cfg.
func NewPipeline(cfg PipelineConfig) (*Pipeline, error) {
	if cfg.Writer == nil || cfg.Memories == nil || cfg.Suggestions == nil || cfg.Creator == nil || cfg.Processor == nil {
		return nil, errors.New("commands: the pipeline needs a writer, the memories and suggestions read models, a memory creator and a processor")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pipeline{cfg: cfg, logger: logger, snapshots: processing.NewSnapshots(cfg.Writer.Store())}, nil
}

func (c *Pipeline) now() time.Time { return c.cfg.Now().UTC() }

func (c *Pipeline) lock(userID, agentID string) func() {
	h := fnv.New32a()
	h.Write([]byte(userID + "\x00" + agentID))
	mu := &c.locks[h.Sum32()%userLockStripes]
	mu.Lock()
	return mu.Unlock
}

// agentState is an agent's cognition state as its stream holds it.
type agentState struct {
	agent memory.AgentView
	// state is a published snapshot, shared with other calls: never
	// change it.
	state *processing.State
	ref   processing.AgentRef
	// autoPromote is this call's auto-promote choice: the agent's, or the
	// request's override.
	autoPromote bool
}

// load returns the agent's state; an agent that does not exist, or is
// another user's, is not found. The state is shared with other calls
// (processing.Snapshots): the caller must not change it.
func (c *Pipeline) load(ctx context.Context, userID, agentID string) (agentState, error) {
	agent, ok, err := c.cfg.Memories.Agent(ctx, userID, agentID)
	if err != nil {
		return agentState{}, err
	}
	if !ok {
		return agentState{}, domain.NotFound("agent")
	}
	ref := processing.AgentRef{UserID: userID, AgentID: agentID, AgentCreatedAt: agent.CreatedAt}
	st, err := c.snapshots.Load(ctx, ref)
	if err != nil {
		return agentState{}, err
	}
	return agentState{agent: agent, state: st, ref: ref}, nil
}

// settings returns the agent's stack settings.
func (c *Pipeline) settings(ctx context.Context, userID, agentID string) (agentsettings.View, error) {
	v, found, err := c.cfg.Memories.Settings(ctx, userID, agentID)
	if err != nil {
		return agentsettings.View{}, err
	}
	if !found {
		return agentsettings.View{}, domain.NotFound("agent")
	}
	return v, nil
}

func (c *Pipeline) appendTo(ctx context.Context, meta domain.Metadata, as agentState, payloads []domain.Payload) error {
	if len(payloads) == 0 {
		return nil
	}
	_, err := c.cfg.Writer.Append(ctx, processing.Stream(as.ref.UserID, as.ref.AgentID), as.state.Version, meta, payloads...)
	if errors.Is(err, domain.ErrWrongExpectedVersion) {
		return domain.Conflict("concurrent_processing", "agent %s's processing state changed while this request was decided; retry it", as.ref.AgentID)
	}
	return err
}

// stillPending keeps the ids the suggestions read model shows pending or
// expired, i.e. not resolved: accepting a suggestion is recorded on the
// agent's memory stream, which the cognition stream's fold does not see.
func (c *Pipeline) stillPending(ctx context.Context, userID string, ids []string) ([]string, error) {
	out := ids[:0:0]
	for _, id := range ids {
		sg, ok, err := c.cfg.Suggestions.Suggestion(ctx, userID, id)
		if err != nil {
			return nil, err
		}
		if ok && sg.ResolvedAt == nil {
			out = append(out, id)
		}
	}
	return out, nil
}

// Configure changes the agent's processing configuration; the read side
// shows the result (query.Service.Processing).
func (c *Pipeline) Configure(ctx context.Context, meta domain.Metadata, agentID string, patch processing.ConfigPatch) error {
	userID, err := userOf(meta)
	if err != nil {
		return err
	}
	defer c.lock(userID, agentID)()
	as, err := c.load(ctx, userID, agentID)
	if err != nil {
		return err
	}
	cfg, err := as.state.Config.Apply(patch)
	if err != nil {
		return err
	}
	return c.appendTo(ctx, meta, as, []domain.Payload{processing.ConfigChanged{AgentRef: as.ref, Config: cfg, ChangedAt: c.now()}})
}

// ProcessRequest asks for a pass: of one transition or, when empty, of
// every transition in order; Force runs transitions whose triggers do
// not fire.
type ProcessRequest struct {
	Transition string
	Force      bool
	// AutoPromote, when set, overrides the stack's auto_promote for this
	// request only (exhaust runs promote by default).
	AutoPromote *bool
	// transitions, when set, replaces Transition: the transitions of an
	// exhaust intensity.
	transitions []processing.Transition
}

// Process runs a pass and records each transition's outcome as a
// ProcessingPassRecorded event (skipped ones too), and expires the
// suggestions due. Processor failures and malformed answers are recorded
// in the pass, never returned as errors. Afterwards it records the
// agent's anxiety level if it changed (recordAnxiety).
func (c *Pipeline) Process(ctx context.Context, meta domain.Metadata, agentID string, req ProcessRequest) ([]processing.Pass, error) {
	userID, err := userOf(meta)
	if err != nil {
		return nil, err
	}
	transitions := processing.Transitions()
	if req.Transition != "" {
		t, err := processing.ParseTransition("transition", req.Transition)
		if err != nil {
			return nil, err
		}
		transitions = []processing.Transition{t}
	}
	req.transitions = transitions
	defer c.lock(userID, agentID)()
	passes, err := c.process(ctx, meta, userID, agentID, req)
	if err != nil {
		return nil, err
	}
	c.observeAnxiety(ctx, meta, userID, agentID)
	return processing.Passes(passes), nil
}

// process runs req.transitions once; the caller holds the agent's lock.
func (c *Pipeline) process(ctx context.Context, meta domain.Metadata, userID, agentID string, req ProcessRequest) ([]processing.PassRecorded, error) {
	as, err := c.load(ctx, userID, agentID)
	if err != nil {
		return nil, err
	}
	as.autoPromote = as.state.Config.AutoPromote
	if req.AutoPromote != nil {
		// This request's choice; the stored configuration (and the shared
		// snapshot) is unchanged.
		as.autoPromote = *req.AutoPromote
	}
	transitions := req.transitions
	now := c.now()
	var payloads []domain.Payload
	due, err := c.stillPending(ctx, userID, as.state.DueToExpire(now))
	if err != nil {
		return nil, err
	}
	for _, id := range due {
		payloads = append(payloads, processing.SuggestionResolved{AgentRef: as.ref, SuggestionID: id, Status: processing.Expired,
			Reason: fmt.Sprintf("auto-expired after %dh", as.state.Config.SuggestionExpiryHours), ResolvedAt: now})
	}
	pending := as.state.PendingFingerprints(now)
	var passes []processing.PassRecorded
	for _, t := range transitions {
		pass, created, err := c.pass(ctx, meta, as, t, req.Force, pending, now)
		if err != nil {
			return nil, err
		}
		payloads = append(payloads, pass)
		for _, sc := range created {
			payloads = append(payloads, sc)
		}
		passes = append(passes, pass)
	}
	if err := c.appendTo(ctx, meta, as, payloads); err != nil {
		return nil, err
	}
	return passes, nil
}

// pass runs one transition. New suggestions' fingerprints are added to
// pending, so a later transition of the same request dedups against them.
func (c *Pipeline) pass(ctx context.Context, meta domain.Metadata, as agentState, t processing.Transition, force bool,
	pending map[string]string, now time.Time) (processing.PassRecorded, []processing.SuggestionCreated, error) {
	layer := as.state.Config.Layers[t]
	info := c.cfg.Processor.Info()
	pass := processing.PassRecorded{AgentRef: as.ref, Pass: processing.Pass{PassID: uuid.Must(uuid.NewV7()).String(), Transition: t, Model: info.Model,
		Forced: force, AutoPromote: as.autoPromote, At: now,
		Consumed: []processing.Consumed{}, Suggestions: []string{}, Created: []string{}, GateDetails: []string{}, Errors: []string{}}}
	skip := func(reason, detail string) (processing.PassRecorded, []processing.SuggestionCreated, error) {
		pass.Skipped, pass.SkipReason, pass.SkipDetail = true, reason, detail
		pass.InferenceBlocked = reason == processing.SkipNeedsInference
		return pass, nil, nil
	}
	all, err := c.sources(ctx, as.ref, t.Source())
	if err != nil {
		return pass, nil, err
	}
	open := as.state.Unconsumed(t, all)
	if !layer.Enabled {
		return skip(processing.SkipDisabled, "the layer is disabled")
	}
	if len(open) == 0 {
		return skip(processing.SkipNoSources, "no unprocessed "+string(t.Source())+" memories")
	}
	if trig := processing.Trigger(t, layer, open, now); !force && !trig.Fires {
		return skip(processing.SkipNotTriggered, trig.Reason)
	}
	if reason, detail := processing.PassGate(t, layer, info, as.state.PassesOn(t, now)); reason != "" {
		return skip(reason, detail)
	}
	// Oldest first: what waited longest is processed first.
	sort.SliceStable(open, func(i, j int) bool { return open[i].CreatedAt.Before(open[j].CreatedAt) })
	batch := open
	if len(batch) > layer.BatchSize {
		batch = batch[:layer.BatchSize]
	}
	pass.SourceCount = len(batch)
	known, err := c.sources(ctx, as.ref, t.Target())
	if err != nil {
		return pass, nil, err
	}
	settings, err := c.settings(ctx, as.ref.UserID, as.ref.AgentID)
	if err != nil {
		return pass, nil, err
	}
	pg := settings.PromotionGates
	gates := processing.Gates{BeliefMinSources: pg.BeliefMinEvidence, BeliefMinConfidence: pg.BeliefMinConfidence,
		ValueMinSources: pg.ValueMinEvidence, ValueRequiresProtection: pg.ValueRequiresProtection}
	lr := settings.LintRules
	lint := processing.LintRules{Enabled: lr.Enabled, MinLength: lr.MinLength, MaxLength: lr.MaxLength,
		CheckFragments: lr.CheckFragments, CheckPrefixArtifacts: lr.CheckPrefixArtifacts, CheckTemplatedNoise: lr.CheckTemplatedNoise}
	protected := map[string]bool{}
	for _, s := range batch {
		protected[s.ID] = s.Protected
	}
	items, itemErrs, err := c.cfg.Processor.Propose(ctx, t, batch, known)
	if err != nil {
		pass.Errors = append(pass.Errors, err.Error())
		return pass, nil, nil
	}
	for _, e := range itemErrs {
		pass.Errors = append(pass.Errors, e.Error())
	}
	into := map[string][]string{}
	var created []processing.SuggestionCreated
	for _, it := range items {
		if why := processing.ItemGate(t, it, gates, protected); why != "" {
			pass.GateBlocked++
			pass.GateDetails = append(pass.GateDetails, why)
			continue
		}
		fp := processing.Fingerprint(it)
		if _, dup := pending[fp]; dup {
			pass.Deduplicated++
			continue
		}
		refs := sourceRefs(t.Source(), it.Sources)
		// An item that fails the lint rules is never auto-promoted: it
		// waits as a suggestion that says why.
		lintFailure := processing.Lint(it.Type, it.Content, lint)
		var made string
		if as.autoPromote && lintFailure == "" {
			m, err := c.cfg.Creator.Create(ctx, meta, as.ref.AgentID, MemoryInput{Type: string(it.Type), Content: it.Content, DerivedFrom: refs, FromProcessing: true})
			if err != nil {
				pass.Errors = append(pass.Errors, fmt.Sprintf("write %s: %v", it.Type, err))
				continue
			}
			made = string(m.Type) + ":" + m.ID
			pass.Created = append(pass.Created, made)
		} else {
			id := uuid.Must(uuid.NewV7()).String()
			created = append(created, processing.SuggestionCreated{AgentRef: as.ref, SuggestionID: id, PassID: pass.PassID, Transition: t,
				MemoryType: string(it.Type), Content: it.Content, Confidence: it.Confidence, Sources: refs, Fingerprint: fp,
				CreatedAt: now, ExpiresAt: now.Add(time.Duration(as.state.Config.SuggestionExpiryHours) * time.Hour), LintFailure: lintFailure})
			made = "suggestion:" + id
			pass.Suggestions = append(pass.Suggestions, id)
		}
		pending[fp] = made
		for _, src := range it.Sources {
			into[src] = append(into[src], made)
		}
	}
	// Sources stay unprocessed when the answer broke the contract, a
	// write failed, or every proposal was held by a gate: a later pass
	// tries them again. An empty answer consumes them (nothing to make).
	allGated := len(items) > 0 && pass.GateBlocked == len(items)
	if len(pass.Errors) == 0 && !allGated {
		for _, s := range batch {
			pass.Consumed = append(pass.Consumed, processing.Consumed{ID: s.ID, Into: append([]string{}, into[s.ID]...)})
		}
	}
	return pass, created, nil
}

func sourceRefs(t memory.Type, ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(t) + ":" + id
	}
	return out
}

// sources lists the latest processing.SourceWindow live memories of type
// typ.
func (c *Pipeline) sources(ctx context.Context, ref processing.AgentRef, typ memory.Type) ([]processing.Source, error) {
	page, err := c.cfg.Memories.ListMemories(ctx, memory.ListQuery{UserID: ref.UserID, AgentID: ref.AgentID, Types: []memory.Type{typ}, Limit: processing.SourceWindow})
	if err != nil {
		return nil, err
	}
	return processing.SourcesOf(page.Memories), nil
}
