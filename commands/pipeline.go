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
	// States folds the agents' cognition streams (required): the
	// composition root shares one with the read side (query.Config).
	States *processing.Snapshots
	Now    func() time.Time // default time.Now
	Logger *slog.Logger     // nil discards
}

// Pipeline runs the processing pipeline and the suggestion lifecycle of
// each agent, and records its anxiety level. The decisions fold the agent's
// cognition stream (processing.State) and append at its version; within
// one server, the commands of one agent are serialized so that a pass and
// an accept never decide on the same state.
type Pipeline struct {
	cfg    PipelineConfig
	logger *slog.Logger
	locks  [userLockStripes]sync.Mutex
}

// NewPipeline checks cfg.
func NewPipeline(cfg PipelineConfig) (*Pipeline, error) {
	if cfg.Writer == nil || cfg.Memories == nil || cfg.Suggestions == nil || cfg.Creator == nil || cfg.Processor == nil || cfg.States == nil {
		return nil, errors.New("commands: the pipeline needs a writer, the memories and suggestions read models, a memory creator, a processor and the processing states")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pipeline{cfg: cfg, logger: logger}, nil
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
	st, err := c.cfg.States.Load(ctx, ref)
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
	return concurrentProcessing(err, as.ref.AgentID)
}

// concurrentProcessing is err, or 409 concurrent_processing when the
// agent's cognition stream moved on from the version a decision expected.
func concurrentProcessing(err error, agentID string) error {
	if errors.Is(err, domain.ErrWrongExpectedVersion) {
		return domain.Conflict("concurrent_processing", "agent %s's processing state changed while this request was decided; retry it", agentID)
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
	drafts := make([]passDraft, len(transitions))
	var promoted []MemoryInput
	for i, t := range transitions {
		if drafts[i], err = c.pass(ctx, as, t, req.Force, pending, now); err != nil {
			return nil, err
		}
		for _, p := range drafts[i].promoted {
			promoted = append(promoted, p.input)
		}
	}
	// record completes the passes with what became of their promoted
	// items (made, in the order of promoted) and returns them with the
	// events that record them.
	record := func(made []MadeMemory) ([]processing.PassRecorded, []domain.Payload) {
		passes := make([]processing.PassRecorded, len(drafts))
		out := append([]domain.Payload{}, payloads...)
		for i, d := range drafts {
			var created []processing.SuggestionCreated
			passes[i], created = d.complete(made[:len(d.promoted)])
			made = made[len(d.promoted):]
			out = append(out, passes[i])
			for _, sc := range created {
				out = append(out, sc)
			}
		}
		return passes, out
	}
	if len(promoted) == 0 {
		passes, payloads := record(nil)
		if err := c.appendTo(ctx, meta, as, payloads); err != nil {
			return nil, err
		}
		return passes, nil
	}
	// The promoted memories and the passes that made them are one append:
	// a refused record stores no memory, and the sources the passes
	// consume are consumed exactly when their memories exist.
	var passes []processing.PassRecorded
	err = c.cfg.Creator.CreateWith(ctx, meta, agentID, promoted, func(made []MadeMemory) (StreamPart, error) {
		var payloads []domain.Payload
		passes, payloads = record(made)
		return StreamPart{Stream: processing.Stream(userID, agentID), Expected: as.state.Version, Payloads: payloads}, nil
	})
	if err != nil {
		return nil, concurrentProcessing(err, agentID)
	}
	return passes, nil
}

// passDraft is a pass decided up to the memories it promotes, which are
// stored with its record: what becomes of them (Memories.CreateWith)
// completes it.
type passDraft struct {
	pass    processing.PassRecorded
	created []processing.SuggestionCreated
	// outputs are the items that became suggestions or promotions, in the
	// processor's order.
	outputs  []passOutput
	promoted []promotion
	batch    []processing.Source
	allGated bool
}

// passOutput is one item a pass made: made ("suggestion:<id>" or
// "<type>:<id>") from sources; promoted is its index in
// passDraft.promoted, -1 for a suggestion.
type passOutput struct {
	made     string
	sources  []string
	promoted int
}

// promotion is an item a pass writes as a memory.
type promotion struct {
	input MemoryInput
	typ   memory.Type
}

// complete is the pass once its promoted items are decided (made[k] is
// promoted[k]'s outcome): each one stored, or that existed already, is
// among the pass's created memories; each one an earlier attempt stored
// and a purge removed since is among its purged ones (its sources are
// consumed: the item was promoted once); each refused is an error of the
// pass, which then leaves its sources unprocessed.
func (d passDraft) complete(made []MadeMemory) (processing.PassRecorded, []processing.SuggestionCreated) {
	pass := d.pass
	if d.pass.Skipped {
		return pass, d.created
	}
	pass.Created = []string{}
	pass.Errors = append([]string{}, d.pass.Errors...)
	into := map[string][]string{}
	for _, o := range d.outputs {
		if o.promoted >= 0 {
			switch mm := made[o.promoted]; {
			case mm.Err != nil:
				pass.Errors = append(pass.Errors, fmt.Sprintf("write %s: %v", d.promoted[o.promoted].typ, mm.Err))
				continue
			case mm.Purged:
				pass.Purged = append(pass.Purged, o.made)
			default:
				pass.Created = append(pass.Created, o.made)
			}
		}
		for _, src := range o.sources {
			into[src] = append(into[src], o.made)
		}
	}
	// Sources stay unprocessed when the answer broke the contract, a
	// write failed, or every proposal was held by a gate: a later pass
	// tries them again. An empty answer consumes them (nothing to make).
	pass.Consumed = []processing.Consumed{}
	if len(pass.Errors) == 0 && !d.allGated {
		for _, s := range d.batch {
			pass.Consumed = append(pass.Consumed, processing.Consumed{ID: s.ID, Into: append([]string{}, into[s.ID]...)})
		}
	}
	return pass, d.created
}

// autoPromotedIDSpace is the UUIDv5 namespace of the ids of auto-promoted
// memories.
var autoPromotedIDSpace = uuid.MustParse("3c0e8f6d-2a41-4b7e-9f55-8d1c7a2e6b90")

// autoPromotedMemoryID is the id of the memory a pass of transition t
// writes for an item of the agent (UUIDv5 of the agent, its creation, t
// and the item's fingerprint, which covers its type, content and
// sources): the same item proposed again from the same sources names the
// same memory, so a pass repeated after a partly stored one (a KurrentDB
// before 25.1) or a failed item (its sources stay unprocessed) finds it
// and writes no second copy.
func autoPromotedMemoryID(ref processing.AgentRef, t processing.Transition, fingerprint string) string {
	key := ref.UserID + "\x00" + ref.AgentID + "\x00" + ref.AgentCreatedAt.UTC().Format(time.RFC3339Nano) + "\x00" + string(t) + "\x00" + fingerprint
	return uuid.NewSHA1(autoPromotedIDSpace, []byte(key)).String()
}

// pass runs one transition up to its writes: the suggestions it makes,
// and the items it promotes, which process stores with its record. New
// suggestions' and promotions' fingerprints are added to pending, so a
// later transition of the same request dedups against them.
func (c *Pipeline) pass(ctx context.Context, as agentState, t processing.Transition, force bool,
	pending map[string]string, now time.Time) (passDraft, error) {
	layer := as.state.Config.Layers[t]
	info := c.cfg.Processor.Info()
	d := passDraft{pass: processing.PassRecorded{AgentRef: as.ref, Pass: processing.Pass{PassID: uuid.Must(uuid.NewV7()).String(), Transition: t, Model: info.Model,
		Forced: force, AutoPromote: as.autoPromote, At: now,
		Consumed: []processing.Consumed{}, Suggestions: []string{}, Created: []string{}, GateDetails: []string{}, Errors: []string{}}}}
	pass := &d.pass
	skip := func(reason, detail string) (passDraft, error) {
		pass.Skipped, pass.SkipReason, pass.SkipDetail = true, reason, detail
		pass.InferenceBlocked = reason == processing.SkipNeedsInference
		return d, nil
	}
	all, err := c.sources(ctx, as.ref, t.Source())
	if err != nil {
		return d, err
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
		return d, err
	}
	settings, err := c.settings(ctx, as.ref.UserID, as.ref.AgentID)
	if err != nil {
		return d, err
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
		return d, nil
	}
	for _, e := range itemErrs {
		pass.Errors = append(pass.Errors, e.Error())
	}
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
		out := passOutput{sources: it.Sources, promoted: -1}
		if as.autoPromote && lintFailure == "" {
			id := autoPromotedMemoryID(as.ref, t, fp)
			out.made, out.promoted = string(it.Type)+":"+id, len(d.promoted)
			d.promoted = append(d.promoted, promotion{typ: it.Type,
				input: MemoryInput{Type: string(it.Type), Content: it.Content, DerivedFrom: refs, FromProcessing: true, id: id,
					taken: as.state.Promoted(out.made)}})
		} else {
			id := uuid.Must(uuid.NewV7()).String()
			d.created = append(d.created, processing.SuggestionCreated{AgentRef: as.ref, SuggestionID: id, PassID: pass.PassID, Transition: t,
				MemoryType: string(it.Type), Content: it.Content, Confidence: it.Confidence, Sources: refs, Fingerprint: fp,
				CreatedAt: now, ExpiresAt: now.Add(time.Duration(as.state.Config.SuggestionExpiryHours) * time.Hour), LintFailure: lintFailure})
			out.made = "suggestion:" + id
			pass.Suggestions = append(pass.Suggestions, id)
		}
		pending[fp] = out.made
		d.outputs = append(d.outputs, out)
	}
	d.batch = batch
	d.allGated = len(items) > 0 && pass.GateBlocked == len(items)
	return d, nil
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
