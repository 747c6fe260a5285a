package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/query"
)

// memEnv is the memory write side on the real stack: SQLite log and read
// model, the projection engine, the built-in local model behind a
// counting switch, and the embedding queue (not running: tests drain it).
type memEnv struct {
	store    *sqlite.EventStore
	readMod  *sqlite.Memories
	writer   *commands.EventWriter
	provider *memSwitchProvider
	model    domain.EmbeddingModel
	queue    *workers.EmbedQueue
	memories *commands.Memories
	// queries reads what the commands wrote.
	queries *query.Service
}

func newMemEnv(t *testing.T) *memEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &memEnv{store: sqlite.NewEventStore(db, 20*time.Millisecond), readMod: sqlite.NewMemories(db)}
	engine := projections.NewEngine(e.store, slog.New(slog.DiscardHandler), projections.NewMemories(e.readMod))
	done := make(chan struct{})
	go func() { defer close(done); _ = engine.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; db.Close() })

	lp, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.provider = &memSwitchProvider{inner: lp}
	e.model = lp.Models()[0]
	e.writer = commands.NewEventWriter(e.store, engine, 0)
	e.queue, err = workers.NewEmbedQueue(workers.EmbedQueueConfig{Writer: e.writer, Reader: e.readMod, Embedder: e.provider,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.memories = e.newMemories(t, e.readMod)
	e.queries, err = query.New(query.Config{Memories: e.readMod, Suggestions: sqlite.NewSuggestions(db), Provenance: sqlite.NewProvenance(db),
		Audit: sqlite.NewAudit(db), Jobs: sqlite.NewJobs(db), Log: e.store})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *memEnv) newMemories(t *testing.T, reader commands.MemoryReadModel) *commands.Memories {
	t.Helper()
	m, err := commands.NewMemories(commands.MemoriesConfig{Writer: e.writer, Reader: reader, Embedder: e.provider, Queue: e.queue, DefaultModel: e.model})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func memMeta(userID string) domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-" + userID, UserID: userID}, RequestID: "test"}
}

func memNote(text string) commands.MemoryInput {
	content, _ := json.Marshal(map[string]string{"content": text})
	return commands.MemoryInput{Type: "notes", Content: content}
}

// memSwitchProvider is the real local provider behind a switch that
// simulates an outage, optionally corrupting answers, and counting calls.
type memSwitchProvider struct {
	inner    *local.Provider
	down     atomic.Bool
	truncate atomic.Bool  // answer vectors one dimension short
	calls    atomic.Int64 // calls that reached the provider, failed or not
}

func (p *memSwitchProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	p.calls.Add(1)
	if p.down.Load() {
		return domain.EmbedResult{}, domain.Errorf(domain.KindProviderUnavailable, "provider down (test)")
	}
	res, err := p.inner.Embed(ctx, req)
	if err == nil && p.truncate.Load() {
		for i, v := range res.Vectors {
			res.Vectors[i] = v[:len(v)-1]
		}
	}
	return res, err
}

// staleAgentReader answers like the read model did before a concurrent
// delete, until the command asks for the stream version a second time:
// its first decision sees the agent and the stream as they were.
type staleAgentReader struct {
	commands.MemoryReadModel
	snapshot     memory.AgentView
	version      int64
	versionCalls atomic.Int32
}

func (r *staleAgentReader) StreamVersion(ctx context.Context, stream string) (int64, error) {
	if r.versionCalls.Add(1) == 1 {
		return r.version, nil
	}
	return r.MemoryReadModel.StreamVersion(ctx, stream)
}

func (r *staleAgentReader) Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error) {
	if r.versionCalls.Load() <= 1 {
		return r.snapshot, true, nil
	}
	return r.MemoryReadModel.Agent(ctx, userID, agentID)
}

func TestMemoriesCreateAfterConcurrentAgentDelete(t *testing.T) {
	e := newMemEnv(t)
	ctx := context.Background()
	meta := memMeta("u1")
	old, err := e.memories.Create(ctx, meta, "a", memNote("before the delete"))
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _, _ := e.readMod.Agent(ctx, "u1", "a")
	version, _ := e.readMod.StreamVersion(ctx, memory.AgentStream("u1", "a"))
	if err := e.memories.DeleteAgent(ctx, meta, "a"); err != nil {
		t.Fatal(err)
	}
	// The writer decides on the state before the delete: its append, at
	// the version before the delete, is refused, and it decides again on
	// the agent as it is now, re-creating it.
	racing := e.newMemories(t, &staleAgentReader{MemoryReadModel: e.readMod, snapshot: snapshot, version: version})
	c, err := racing.Create(ctx, meta, "a", memNote("after the delete"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.queries.Get(ctx, "u1", c.ID)
	if err != nil || v.AgentID != "a" || v.Embedding.Status != memory.StatusEmbedded {
		t.Fatalf("memory written after the delete: %+v, %v", v, err)
	}
	if _, err := e.queries.Get(ctx, "u1", old.ID); domain.ErrorKind(err) != domain.KindNotFound {
		t.Errorf("the deleted agent's memory is back: %v", err)
	}
	page, err := e.queries.List(ctx, memory.ListQuery{UserID: "u1", AgentID: "a"})
	if err != nil || len(page.Memories) != 1 || page.Memories[0].ID != c.ID {
		t.Errorf("agent holds %d memories, want exactly the new one", len(page.Memories))
	}
	events, _ := e.store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	var created, agents int
	for _, ev := range events {
		switch ev.Type {
		case "MemoryCreated":
			created++
		case "AgentCreated":
			agents++
		}
	}
	if created != 2 || agents != 2 {
		t.Errorf("log holds %d MemoryCreated and %d AgentCreated, want 2 (nothing recorded on the stale decision) and 2", created, agents)
	}
}

func TestMemoriesEmbedOnWriteRejectsBadVectors(t *testing.T) {
	e := newMemEnv(t)
	ctx := context.Background()
	e.provider.truncate.Store(true)
	c, err := e.memories.Create(ctx, memMeta("u1"), "a", memNote("vectors of the wrong size are never recorded"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Embedding.Status != memory.StatusPending {
		t.Errorf("status = %s, want pending", c.Embedding.Status)
	}
	events, _ := e.store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	for _, ev := range events {
		if ev.Type == "MemoryEmbedded" {
			t.Error("a vector of the wrong size was recorded")
		}
	}
	e.provider.truncate.Store(false)
	if n, err := e.queue.Drain(ctx); n != 1 || err != nil {
		t.Errorf("Drain = %d, %v", n, err)
	}
}

func TestMemoriesCommandErrors(t *testing.T) {
	e := newMemEnv(t)
	ctx := context.Background()
	if _, err := e.memories.Create(ctx, domain.Metadata{}, "a", memNote("x")); err == nil || domain.ErrorKind(err) != domain.KindInternal {
		t.Errorf("a write without a user: %v", err)
	}
	if _, err := commands.NewMemories(commands.MemoriesConfig{Writer: e.writer, Reader: e.readMod, Embedder: e.provider}); err == nil {
		t.Error("NewMemories without a default model succeeded")
	}
	if err := e.memories.DeleteAgent(ctx, memMeta("u1"), "missing"); domain.ErrorKind(err) != domain.KindNotFound {
		t.Errorf("delete of a missing agent: %v", err)
	}
	if _, err := e.queries.List(ctx, memory.ListQuery{UserID: "u1", Limit: 1001}); domain.ErrorKind(err) != domain.KindInvalid {
		t.Errorf("limit 1001: %v", err)
	}
	c, _ := e.memories.Create(ctx, memMeta("u1"), "a", memNote("x"))
	if _, err := e.memories.Patch(ctx, memMeta("u1"), c.ID, commands.MemoryPatch{}); domain.ErrorKind(err) != domain.KindInvalid {
		t.Errorf("empty patch: %v", err)
	}
	// A patch that changes nothing records nothing.
	before, _ := e.store.Head(ctx)
	same := []string{}
	if _, err := e.memories.Patch(ctx, memMeta("u1"), c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"content":"x"}`), Tags: &same}); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.store.Head(ctx); after != before {
		t.Error("a no-op patch appended events")
	}
}

func TestMemoriesConcurrentWritesToANewAgent(t *testing.T) {
	e := newMemEnv(t)
	ctx := context.Background()
	const writers = 8
	errs := make(chan error, writers)
	ids := make(chan string, writers*5)
	for w := range writers {
		go func() {
			c, err := e.memories.CreateBatch(ctx, memMeta("u1"), "fresh", []commands.MemoryInput{
				memNote(fmt.Sprint("a", w)), memNote(fmt.Sprint("b", w)), memNote(fmt.Sprint("c", w)), memNote(fmt.Sprint("d", w)), memNote(fmt.Sprint("e", w))})
			for _, m := range c {
				ids <- m.ID
			}
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(ids)
	for id := range ids {
		if _, err := e.queries.Get(ctx, "u1", id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	page, _ := e.queries.Agents(ctx, memory.AgentListQuery{UserID: "u1"})
	if len(page.Agents) != 1 || page.Agents[0].MemoryCount != writers*5 {
		t.Errorf("agents = %+v", page.Agents)
	}
}

// staleMemoryReader answers like the read model did before a concurrent
// patch, until the command asks for the stream version a second time.
type staleMemoryReader struct {
	commands.MemoryReadModel
	snapshot     memory.View
	version      int64
	versionCalls atomic.Int32
}

func (r *staleMemoryReader) StreamVersion(ctx context.Context, stream string) (int64, error) {
	if r.versionCalls.Add(1) == 1 {
		return r.version, nil
	}
	return r.MemoryReadModel.StreamVersion(ctx, stream)
}

func (r *staleMemoryReader) Memory(ctx context.Context, userID, id string) (memory.View, bool, error) {
	if r.versionCalls.Load() <= 1 {
		return r.snapshot, true, nil
	}
	return r.MemoryReadModel.Memory(ctx, userID, id)
}

// TestMemoriesPatchDecidesAgainAfterAConflict: a patch decided on a state
// another server's patch has since changed is refused by the log and
// decided again, keeping both patches, with one event each.
func TestMemoriesPatchDecidesAgainAfterAConflict(t *testing.T) {
	e := newMemEnv(t)
	ctx := context.Background()
	meta := memMeta("u1")
	c, err := e.memories.Create(ctx, meta, "a", memNote("base"))
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _, _ := e.readMod.Memory(ctx, "u1", c.ID)
	version, _ := e.readMod.StreamVersion(ctx, memory.AgentStream("u1", "a"))
	if _, err := e.memories.Patch(ctx, meta, c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"speaker":"ann"}`)}); err != nil {
		t.Fatal(err)
	}
	// A second server, whose first decision reads the state before the
	// patch above; If-Match names the version it read.
	other := e.newMemories(t, &staleMemoryReader{MemoryReadModel: e.readMod, snapshot: snapshot, version: version})
	v, err := other.Patch(ctx, meta, c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"reason":"why"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Speaker, Reason string }
	json.Unmarshal(v.Content, &got)
	if got.Speaker != "ann" || got.Reason != "why" || v.Version != 3 {
		t.Errorf("after both patches: %s at version %d", v.Content, v.Version)
	}
	events, _ := e.store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	var patched int
	for _, ev := range events {
		if ev.Type == (memory.MemoryPatched{}).EventType() {
			patched++
		}
	}
	if patched != 2 {
		t.Errorf("%d MemoryPatched events, want 2", patched)
	}

	// With If-Match naming the version the stale decision saw, the second
	// decision refuses: the memory changed since.
	snapshot, _, _ = e.readMod.Memory(ctx, "u1", c.ID)
	version, _ = e.readMod.StreamVersion(ctx, memory.AgentStream("u1", "a"))
	if _, err := e.memories.Patch(ctx, meta, c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"speaker":"bob"}`)}); err != nil {
		t.Fatal(err)
	}
	other = e.newMemories(t, &staleMemoryReader{MemoryReadModel: e.readMod, snapshot: snapshot, version: version})
	_, err = other.Patch(ctx, meta, c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"speaker":"cy"}`), IfMatch: commands.IfMatch{snapshot.ETag()}})
	if domain.ErrorKind(err) != domain.KindPreconditionFailed {
		t.Errorf("a conditional patch decided on a stale state: err = %v", err)
	}
}

// stuckVersionReader always shows an agent stream version the log has
// moved past, as a read model that never catches up would.
type stuckVersionReader struct{ commands.MemoryReadModel }

func (stuckVersionReader) StreamVersion(context.Context, string) (int64, error) {
	return domain.ExpectNoStream, nil
}

// TestMemoriesGiveUpAfterBoundedConflicts: a command that keeps losing the
// race for the agent stream stops with 409 concurrent_writes and records
// nothing.
func TestMemoriesGiveUpAfterBoundedConflicts(t *testing.T) {
	e := newMemEnv(t)
	ctx := context.Background()
	c, err := e.memories.Create(ctx, memMeta("u1"), "a", memNote("first"))
	if err != nil {
		t.Fatal(err)
	}
	stuck := e.newMemories(t, stuckVersionReader{e.readMod})
	_, err = stuck.Patch(ctx, memMeta("u1"), c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"reason":"never"}`)})
	if de, ok := domain.AsError(err); !ok || de.Kind != domain.KindConflict || de.PublicCode() != "concurrent_writes" {
		t.Fatalf("err = %v, want 409 concurrent_writes", err)
	}
	events, _ := e.store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	for _, ev := range events {
		if ev.Type == (memory.MemoryPatched{}).EventType() {
			t.Errorf("a refused patch was recorded: %s", ev.Payload)
		}
	}
}
