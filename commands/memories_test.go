package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/memenvtest"
)

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
	e := memenvtest.New(t)
	ctx := context.Background()
	meta := memenvtest.Meta("u1")
	old, err := e.Memories.Create(ctx, meta, "a", memenvtest.Note("before the delete"))
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _, _ := e.ReadModel.Agent(ctx, "u1", "a")
	version, _ := e.ReadModel.StreamVersion(ctx, memory.AgentStream("u1", "a"))
	if err := e.Memories.DeleteAgent(ctx, meta, "a"); err != nil {
		t.Fatal(err)
	}
	// The writer decides on the state before the delete: its append, at
	// the version before the delete, is refused, and it decides again on
	// the agent as it is now, re-creating it.
	racing := e.NewMemories(t, &staleAgentReader{MemoryReadModel: e.ReadModel, snapshot: snapshot, version: version})
	c, err := racing.Create(ctx, meta, "a", memenvtest.Note("after the delete"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.Queries.Get(ctx, "u1", c.ID)
	if err != nil || v.AgentID != "a" || v.Embedding.Status != memory.StatusEmbedded {
		t.Fatalf("memory written after the delete: %+v, %v", v, err)
	}
	if _, err := e.Queries.Get(ctx, "u1", old.ID); domain.ErrorKind(err) != domain.KindNotFound {
		t.Errorf("the deleted agent's memory is back: %v", err)
	}
	page, err := e.Queries.List(ctx, memory.ListQuery{UserID: "u1", AgentID: "a"})
	if err != nil || len(page.Memories) != 1 || page.Memories[0].ID != c.ID {
		t.Errorf("agent holds %d memories, want exactly the new one", len(page.Memories))
	}
	events, _ := e.Store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
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
	e := memenvtest.New(t)
	ctx := context.Background()
	e.Provider.Truncate.Store(true)
	c, err := e.Memories.Create(ctx, memenvtest.Meta("u1"), "a", memenvtest.Note("vectors of the wrong size are never recorded"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Embedding.Status != memory.StatusPending {
		t.Errorf("status = %s, want pending", c.Embedding.Status)
	}
	events, _ := e.Store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	for _, ev := range events {
		if ev.Type == "MemoryEmbedded" {
			t.Error("a vector of the wrong size was recorded")
		}
	}
	e.Provider.Truncate.Store(false)
	if n, err := e.Queue.Drain(ctx); n != 1 || err != nil {
		t.Errorf("Drain = %d, %v", n, err)
	}
}

func TestMemoriesCommandErrors(t *testing.T) {
	e := memenvtest.New(t)
	ctx := context.Background()
	if _, err := e.Memories.Create(ctx, domain.Metadata{}, "a", memenvtest.Note("x")); err == nil || domain.ErrorKind(err) != domain.KindInternal {
		t.Errorf("a write without a user: %v", err)
	}
	if _, err := commands.NewMemories(commands.MemoriesConfig{Writer: e.Writer, Reader: e.ReadModel, Embedder: e.Provider}); err == nil {
		t.Error("NewMemories without a default model succeeded")
	}
	if err := e.Memories.DeleteAgent(ctx, memenvtest.Meta("u1"), "missing"); domain.ErrorKind(err) != domain.KindNotFound {
		t.Errorf("delete of a missing agent: %v", err)
	}
	if _, err := e.Queries.List(ctx, memory.ListQuery{UserID: "u1", Limit: 1001}); domain.ErrorKind(err) != domain.KindInvalid {
		t.Errorf("limit 1001: %v", err)
	}
	c, _ := e.Memories.Create(ctx, memenvtest.Meta("u1"), "a", memenvtest.Note("x"))
	if _, err := e.Memories.Patch(ctx, memenvtest.Meta("u1"), c.ID, commands.MemoryPatch{}); domain.ErrorKind(err) != domain.KindInvalid {
		t.Errorf("empty patch: %v", err)
	}
	// A patch that changes nothing records nothing.
	before, _ := e.Store.Head(ctx)
	same := []string{}
	if _, err := e.Memories.Patch(ctx, memenvtest.Meta("u1"), c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"content":"x"}`), Tags: &same}); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.Store.Head(ctx); after != before {
		t.Error("a no-op patch appended events")
	}
}

func TestMemoriesConcurrentWritesToANewAgent(t *testing.T) {
	e := memenvtest.New(t)
	ctx := context.Background()
	const writers = 8
	errs := make(chan error, writers)
	ids := make(chan string, writers*5)
	for w := range writers {
		go func() {
			c, err := e.Memories.CreateBatch(ctx, memenvtest.Meta("u1"), "fresh", []commands.MemoryInput{
				memenvtest.Note(fmt.Sprint("a", w)), memenvtest.Note(fmt.Sprint("b", w)), memenvtest.Note(fmt.Sprint("c", w)), memenvtest.Note(fmt.Sprint("d", w)), memenvtest.Note(fmt.Sprint("e", w))})
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
		if _, err := e.Queries.Get(ctx, "u1", id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	page, _ := e.Queries.Agents(ctx, memory.AgentListQuery{UserID: "u1"})
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
	e := memenvtest.New(t)
	ctx := context.Background()
	meta := memenvtest.Meta("u1")
	c, err := e.Memories.Create(ctx, meta, "a", memenvtest.Note("base"))
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _, _ := e.ReadModel.Memory(ctx, "u1", c.ID)
	version, _ := e.ReadModel.StreamVersion(ctx, memory.AgentStream("u1", "a"))
	if _, err := e.Memories.Patch(ctx, meta, c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"speaker":"ann"}`)}); err != nil {
		t.Fatal(err)
	}
	// A second server, whose first decision reads the state before the
	// patch above; If-Match names the version it read.
	other := e.NewMemories(t, &staleMemoryReader{MemoryReadModel: e.ReadModel, snapshot: snapshot, version: version})
	v, err := other.Patch(ctx, meta, c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"reason":"why"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Speaker, Reason string }
	json.Unmarshal(v.Content, &got)
	if got.Speaker != "ann" || got.Reason != "why" || v.Version != 3 {
		t.Errorf("after both patches: %s at version %d", v.Content, v.Version)
	}
	events, _ := e.Store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
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
	snapshot, _, _ = e.ReadModel.Memory(ctx, "u1", c.ID)
	version, _ = e.ReadModel.StreamVersion(ctx, memory.AgentStream("u1", "a"))
	if _, err := e.Memories.Patch(ctx, meta, c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"speaker":"bob"}`)}); err != nil {
		t.Fatal(err)
	}
	other = e.NewMemories(t, &staleMemoryReader{MemoryReadModel: e.ReadModel, snapshot: snapshot, version: version})
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
	e := memenvtest.New(t)
	ctx := context.Background()
	c, err := e.Memories.Create(ctx, memenvtest.Meta("u1"), "a", memenvtest.Note("first"))
	if err != nil {
		t.Fatal(err)
	}
	stuck := e.NewMemories(t, stuckVersionReader{e.ReadModel})
	_, err = stuck.Patch(ctx, memenvtest.Meta("u1"), c.ID, commands.MemoryPatch{Content: json.RawMessage(`{"reason":"never"}`)})
	if de, ok := domain.AsError(err); !ok || de.Kind != domain.KindConflict || de.PublicCode() != "concurrent_writes" {
		t.Fatalf("err = %v, want 409 concurrent_writes", err)
	}
	events, _ := e.Store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	for _, ev := range events {
		if ev.Type == (memory.MemoryPatched{}).EventType() {
			t.Errorf("a refused patch was recorded: %s", ev.Payload)
		}
	}
}
