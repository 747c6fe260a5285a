package commands_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/kurrentdb"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/internal/memenvtest"
)

// firstWriter is the event log shared with another writer that, once
// armed, appends one real event to the armed stream just before the next
// append to it that expects a version: that append finds the stream moved
// on.
type firstWriter struct {
	domain.EventStore

	mu     sync.Mutex
	stream string
	event  domain.Payload
}

func (f *firstWriter) arm(stream string, event domain.Payload) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stream, f.event = stream, event
}

func (f *firstWriter) before(ctx context.Context, stream string, expected int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if stream != f.stream || expected == domain.ExpectAny {
		return nil
	}
	f.stream = ""
	ev, err := domain.MarshalEvent(f.event, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "other-node"}, RequestID: "other-node", Source: domain.SourceSystem})
	if err != nil {
		return err
	}
	_, err = f.EventStore.Append(ctx, stream, domain.ExpectAny, []domain.NewEvent{ev})
	return err
}

func (f *firstWriter) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	if err := f.before(ctx, stream, expected); err != nil {
		return domain.AppendResult{}, err
	}
	return f.EventStore.Append(ctx, stream, expected, events)
}

func (f *firstWriter) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	for _, p := range parts {
		if err := f.before(ctx, p.Stream, p.Expected); err != nil {
			return nil, err
		}
	}
	return f.EventStore.AppendStreams(ctx, parts)
}

// kurrentLog is a KurrentDB log of the in-memory test server playing
// version (kurrentdbtest.Version24_10 or Version25_1).
func kurrentLog(t *testing.T, version string) domain.EventStore {
	t.Helper()
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	log, err := kurrentdb.Open(t.Context(), kurrentdb.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return log
}

// A processing request that auto-promotes stores its memories with the
// record of its passes, in one append: when another writer moved the
// agent's cognition stream first, the request is refused (409
// concurrent_processing) and stores no memory, and its retry stores one
// memory per item. On a KurrentDB before 25.1, which appends one stream
// at a time, the refused request's memories stay, but the retry finds
// them by their derived ids and stores no second copy.
func TestAutoPromotedMemoriesAreStoredWithTheirPassOrNotAtAll(t *testing.T) {
	for _, c := range []struct {
		name string
		// log is the log under the other writer; nil: SQLite.
		log func(t *testing.T) domain.EventStore
		// refusedKeepsMemories: the log stores part by part.
		refusedKeepsMemories bool
	}{
		{"SQLite", nil, false},
		{"KurrentDB 25.1", func(t *testing.T) domain.EventStore { return kurrentLog(t, kurrentdbtest.Version25_1) }, false},
		{"KurrentDB 24.10, one stream at a time", func(t *testing.T) domain.EventStore { return kurrentLog(t, kurrentdbtest.Version24_10) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, other := envUnderOtherWriter(t, c.log)
			ctx, meta, agent := t.Context(), memenvtest.Meta("u1"), "agent"
			pipeline, err := commands.NewPipeline(commands.PipelineConfig{Writer: env.Writer, Memories: env.ReadModel, Suggestions: env.Suggestions,
				Creator: env.Memories, Processor: processing.NewRuleExtractor(), States: processing.NewSnapshots(env.Store)})
			if err != nil {
				t.Fatal(err)
			}
			captureRaws(t, env.Memories, agent)
			made := func() map[string]bool {
				page, err := env.ReadModel.ListMemories(ctx, memory.ListQuery{UserID: "u1", AgentID: agent, Limit: 100,
					Types: []memory.Type{memory.Episode, memory.Note, memory.Belief}})
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]bool{}
				for _, m := range page.Memories {
					out[string(m.Type)+":"+m.ID] = true
				}
				return out
			}
			view, ok, err := env.ReadModel.Agent(ctx, "u1", agent)
			if err != nil || !ok {
				t.Fatalf("agent: %v %v", ok, err)
			}
			ref := processing.AgentRef{UserID: "u1", AgentID: agent, AgentCreatedAt: view.CreatedAt}
			other.arm(processing.Stream("u1", agent), processing.ConfigChanged{AgentRef: ref, Config: processing.DefaultConfig(), ChangedAt: time.Now().UTC()})
			promote := true
			req := commands.ProcessRequest{Force: true, AutoPromote: &promote}

			_, err = pipeline.Process(ctx, meta, agent, req)
			if de, ok := domain.AsError(err); !ok || de.Code != "concurrent_processing" {
				t.Fatalf("refused request: %v, want 409 concurrent_processing", err)
			}
			if kept := made(); (len(kept) > 0) != c.refusedKeepsMemories {
				t.Fatalf("the refused request left %d memories (%v); want some: %v", len(kept), kept, c.refusedKeepsMemories)
			}

			passes, err := pipeline.Process(ctx, meta, agent, req)
			if err != nil {
				t.Fatal(err)
			}
			var created []string
			for _, p := range passes {
				created = append(created, p.Created...)
			}
			stored := made()
			if len(created) < 2 || len(stored) != len(created) {
				t.Fatalf("the retry created %v; the agent holds %d memories (%v), want exactly those", created, len(stored), stored)
			}
			for _, m := range created {
				if !stored[m] {
					t.Fatalf("the retry names %s, which the agent does not hold (%v)", m, stored)
				}
			}
		})
	}
}

// An auto-promoting pass whose items the memory quota only partly admits
// stores those that fit, records the others as errors and leaves its
// sources unprocessed; once the quota allows, the next pass proposes the
// same items, finds the one stored by its id and stores only the others:
// one memory per item, none twice.
func TestAutoPromotionAfterARefusedItemStoresNoSecondCopy(t *testing.T) {
	env := memenvtest.New(t)
	ctx, meta, agent := t.Context(), memenvtest.Meta("u1"), "agent"
	raws := captureRaws(t, env.Memories, agent)
	// process runs every transition once with auto_promote, its memories
	// created under quota (0: none), and returns what its passes created
	// and the errors they recorded.
	process := func(quota int) (created, errs []string) {
		t.Helper()
		mem, err := commands.NewMemories(commands.MemoriesConfig{Writer: env.Writer, Reader: env.ReadModel, Embedder: env.Provider, DefaultModel: env.Model,
			Quotas: memory.Quotas{MemoriesPerAgent: quota}})
		if err != nil {
			t.Fatal(err)
		}
		pipeline, err := commands.NewPipeline(commands.PipelineConfig{Writer: env.Writer, Memories: env.ReadModel, Suggestions: env.Suggestions,
			Creator: mem, Processor: processing.NewRuleExtractor(), States: processing.NewSnapshots(env.Store)})
		if err != nil {
			t.Fatal(err)
		}
		promote := true
		passes, err := pipeline.Process(ctx, meta, agent, commands.ProcessRequest{Force: true, AutoPromote: &promote})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range passes {
			created, errs = append(created, p.Created...), append(errs, p.Errors...)
		}
		return created, errs
	}
	stored := func() int {
		view, _, err := env.ReadModel.Agent(ctx, "u1", agent)
		if err != nil {
			t.Fatal(err)
		}
		return int(view.StoredMemories) - len(raws)
	}

	// The rules make an episode, then a belief and a note of one pass:
	// room for two stores the episode and the belief, refuses the note.
	first, errs := process(len(raws) + 2)
	if len(first) != 2 || len(errs) == 0 || stored() != 2 {
		t.Fatalf("under a quota of two more memories: created %v, errors %v, %d stored; want two created and stored, the third an error", first, errs, stored())
	}
	second, errs := process(0)
	union := map[string]bool{}
	for _, m := range append(append([]string{}, first...), second...) {
		union[m] = true
	}
	if len(errs) != 0 || stored() != len(union) || len(union) == len(first)+len(second) {
		t.Fatalf("once the quota allows: created %v after %v, errors %v; the agent holds %d processed memories, want the %d named, the stored belief named again, not copied",
			second, first, errs, stored(), len(union))
	}
}

// autoPromoting is a pipeline over env's log and read models whose
// memories are created under a memory quota (0: none): process runs
// every transition once, forced, with auto_promote.
// captureRaws stores, as raw entries of agent through memories, three
// texts the rule extractor promotes (an episode, a belief and a note),
// and returns them.
func captureRaws(t *testing.T, memories *commands.Memories, agent string) []string {
	t.Helper()
	raws := []string{
		"Yesterday we deployed the billing service and it failed, then I learned to check migrations",
		"I think caching always helps latency",
		"Reminder: the docs are at https://example.com/docs",
	}
	for _, text := range raws {
		content, _ := json.Marshal(map[string]string{"content": text})
		if _, err := memories.Create(t.Context(), memenvtest.Meta("u1"), agent, commands.MemoryInput{Type: "raw_entry", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	return raws
}

func autoPromoting(t *testing.T, env *memenvtest.Env, quota int) func(agent string) ([]processing.Pass, error) {
	t.Helper()
	return autoPromotingWith(t, env, quota, env.Provider, env.Model)
}

// autoPromotingWith is autoPromoting whose memories are embedded by
// embedder with model.
func autoPromotingWith(t *testing.T, env *memenvtest.Env, quota int, embedder domain.Embedder, model domain.EmbeddingModel) func(agent string) ([]processing.Pass, error) {
	t.Helper()
	mem, err := commands.NewMemories(commands.MemoriesConfig{Writer: env.Writer, Reader: env.ReadModel, Embedder: embedder, DefaultModel: model,
		Quotas: memory.Quotas{MemoriesPerAgent: quota}})
	if err != nil {
		t.Fatal(err)
	}
	pipeline, err := commands.NewPipeline(commands.PipelineConfig{Writer: env.Writer, Memories: env.ReadModel, Suggestions: env.Suggestions,
		Creator: mem, Processor: processing.NewRuleExtractor(), States: processing.NewSnapshots(env.Store)})
	if err != nil {
		t.Fatal(err)
	}
	promote := true
	return func(agent string) ([]processing.Pass, error) {
		return pipeline.Process(t.Context(), memenvtest.Meta("u1"), agent, commands.ProcessRequest{Force: true, AutoPromote: &promote})
	}
}

// An auto-promoted memory purged while the sources of its pass are still
// unprocessed stays purged. Its sources stay unprocessed after an item of
// the pass was refused (any log) or, on a KurrentDB before 25.1, after
// the pass's record was refused once its memories were stored. The next
// pass proposes the same item, finds its id taken by the purged memory
// and records it as purged — not created, not an error — writes no copy,
// stores the rest and consumes the sources, so no later pass proposes it
// again.
func TestAPurgedAutoPromotedMemoryStaysPurged(t *testing.T) {
	for _, c := range []struct {
		name string
		// log is the log under the other writer; nil: SQLite.
		log func(t *testing.T) domain.EventStore
		// refuseRecord: the first pass's record is refused (another
		// writer moves the cognition stream first); otherwise the memory
		// quota refuses one of its items.
		refuseRecord bool
	}{
		{"SQLite, after a refused item", nil, false},
		{"KurrentDB 24.10, after a refused record", func(t *testing.T) domain.EventStore { return kurrentLog(t, kurrentdbtest.Version24_10) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, other := envUnderOtherWriter(t, c.log)
			ctx, meta, agent := t.Context(), memenvtest.Meta("u1"), "agent"
			raws := captureRaws(t, env.Memories, agent)
			held := func() []string {
				page, err := env.ReadModel.ListMemories(ctx, memory.ListQuery{UserID: "u1", AgentID: agent, Limit: 100,
					Types: []memory.Type{memory.Episode, memory.Note, memory.Belief}})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, m := range page.Memories {
					out = append(out, string(m.Type)+":"+m.ID)
				}
				return out
			}

			if c.refuseRecord {
				view, _, err := env.ReadModel.Agent(ctx, "u1", agent)
				if err != nil {
					t.Fatal(err)
				}
				ref := processing.AgentRef{UserID: "u1", AgentID: agent, AgentCreatedAt: view.CreatedAt}
				other.arm(processing.Stream("u1", agent), processing.ConfigChanged{AgentRef: ref, Config: processing.DefaultConfig(), ChangedAt: time.Now().UTC()})
				if _, err := autoPromoting(t, env, 0)(agent); err == nil {
					t.Fatal("the first pass was not refused")
				}
			} else if _, err := autoPromoting(t, env, len(raws)+2)(agent); err != nil {
				t.Fatal(err)
			}
			// The rules make three items: the quota admits two of them, a
			// refused record leaves all three.
			stored := held()
			if want := map[bool]int{false: 2, true: 3}[c.refuseRecord]; len(stored) != want {
				t.Fatalf("the first pass left %v; want %d memories, its sources unprocessed", stored, want)
			}
			// The belief's pass is the one whose sources stay unprocessed.
			i := slices.IndexFunc(stored, func(m string) bool { return strings.HasPrefix(m, "belief:") })
			if i < 0 {
				t.Fatalf("the first pass stored no belief: %v", stored)
			}
			purged := stored[i]
			_, id, _ := strings.Cut(purged, ":")
			if err := env.Memories.Purge(ctx, meta, id, nil); err != nil {
				t.Fatal(err)
			}

			passes, err := autoPromoting(t, env, 0)(agent)
			if err != nil {
				t.Fatalf("the pass after the purge: %v", err)
			}
			var created, purgedNow, errs []string
			for _, p := range passes {
				created, purgedNow, errs = append(created, p.Created...), append(purgedNow, p.Purged...), append(errs, p.Errors...)
			}
			now := held()
			if len(errs) != 0 || !slices.Equal(purgedNow, []string{purged}) || slices.Contains(created, purged) || slices.Contains(now, purged) {
				t.Fatalf("after purging %s: created %v, purged %v, errors %v, the agent holds %v; want it purged, not written again, no error",
					purged, created, purgedNow, errs, now)
			}
			// The episode and the note, stored now or before.
			if len(now) != 2 || len(created) == 0 || slices.ContainsFunc(created, func(m string) bool { return !slices.Contains(now, m) }) {
				t.Fatalf("after purging %s: created %v, the agent holds %v; want the other two items held, those created among them", purged, created, now)
			}

			passes, err = autoPromoting(t, env, 0)(agent)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range passes {
				if !strings.HasPrefix(string(p.Transition), "raw_") {
					continue
				}
				if len(p.Created)+len(p.Purged)+len(p.Suggestions) != 0 || p.SkipReason != processing.SkipNoSources {
					t.Fatalf("a later pass of %s: %+v; want no sources left", p.Transition, p)
				}
			}
		})
	}
}

// An auto-promoted memory that was purged is not sent to the embedder
// again when a later pass proposes the same item: the agent's processing
// state knows the pass that stored it, so its id is known taken before
// anything is embedded, and the item is recorded as purged. The first
// pass's quota refuses one of its items, which leaves the stored belief's
// sources unprocessed; the belief is purged, and the next pass proposes
// it again. The embeddings come from an OpenAI-compatible server on
// loopback that records every text it is sent.
func TestAPurgedAutoPromotedMemoryIsNotEmbeddedAgain(t *testing.T) {
	env := memenvtest.New(t)
	counter, provider := memenvtest.NewCountingProvider(t)
	ctx, meta, agent := t.Context(), memenvtest.Meta("u1"), "agent"
	raws := captureRaws(t, autoPromotingMemories(t, env, provider), agent)
	if _, err := autoPromotingWith(t, env, len(raws)+2, provider, memenvtest.CountedModel)(agent); err != nil {
		t.Fatal(err)
	}
	page, err := env.ReadModel.ListMemories(ctx, memory.ListQuery{UserID: "u1", AgentID: agent, Limit: 100, Types: []memory.Type{memory.Belief}})
	if err != nil || len(page.Memories) != 1 {
		t.Fatalf("the first pass stored beliefs %v (%v); want one", page.Memories, err)
	}
	belief := page.Memories[0]
	text, err := memory.IndexedText(belief.Type, belief.Content)
	if err != nil {
		t.Fatal(err)
	}
	if !counter.Received(text) {
		t.Fatalf("the stored belief's text %q was never embedded", text)
	}
	if err := env.Memories.Purge(ctx, meta, belief.ID, nil); err != nil {
		t.Fatal(err)
	}

	mark := counter.Mark()
	passes, err := autoPromotingWith(t, env, 0, provider, memenvtest.CountedModel)(agent)
	if err != nil {
		t.Fatalf("the pass after the purge: %v", err)
	}
	var purged []string
	for _, p := range passes {
		purged = append(purged, p.Purged...)
	}
	if !slices.Equal(purged, []string{"belief:" + belief.ID}) {
		t.Fatalf("the pass after the purge recorded purged %v; want the belief %s", purged, belief.ID)
	}
	if counter.ReceivedSince(mark, text) {
		t.Fatalf("the purged belief's text %q was sent to the embedder again", text)
	}
}

// autoPromotingMemories are memory commands of env embedded by embedder
// with memenvtest.CountedModel.
func autoPromotingMemories(t *testing.T, env *memenvtest.Env, embedder domain.Embedder) *commands.Memories {
	t.Helper()
	mem, err := commands.NewMemories(commands.MemoriesConfig{Writer: env.Writer, Reader: env.ReadModel, Embedder: embedder, DefaultModel: memenvtest.CountedModel})
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// envUnderOtherWriter is a memory environment whose log is wrapped by a
// firstWriter, the other writer a test lets append first: on SQLite when
// log is nil, else on the log it makes.
func envUnderOtherWriter(t *testing.T, log func(t *testing.T) domain.EventStore) (*memenvtest.Env, *firstWriter) {
	t.Helper()
	other := &firstWriter{}
	if log == nil {
		return memenvtest.NewAround(t, func(log domain.EventStore) domain.EventStore { other.EventStore = log; return other }), other
	}
	other.EventStore = log(t)
	return memenvtest.NewOn(t, other), other
}
