package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/kurrentdb"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/internal/memenvtest"
)

func TestEmbedQueueDrainsAfterOutage(t *testing.T) {
	e := memenvtest.New(t)
	ctx := context.Background()
	e.Provider.Down.Store(true)
	var ids []string
	for _, w := range []struct{ user, agent string }{{"u1", "a"}, {"u1", "a"}, {"u1", "b"}, {"u2", "a"}} {
		c, err := e.Memories.CreateBatch(ctx, memenvtest.Meta(w.user), w.agent, []commands.MemoryInput{memenvtest.Note("x " + w.user + w.agent), memenvtest.Note("y")})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range c {
			if m.Embedding.Status != memory.StatusPending {
				t.Fatalf("status %s while the provider is down", m.Embedding.Status)
			}
			ids = append(ids, w.user+"/"+m.ID)
		}
	}
	if n, err := e.Queue.Drain(ctx); n != 0 || domain.ErrorKind(err) != domain.KindProviderUnavailable {
		t.Errorf("Drain while down = %d, %v", n, err)
	}

	e.Provider.Down.Store(false)
	calls := e.Provider.Calls.Load()
	n, err := e.Queue.Drain(ctx)
	if err != nil || n != len(ids) {
		t.Fatalf("Drain = %d, %v; want %d", n, err, len(ids))
	}
	// One provider call (and one append) per agent: u1/a, u1/b, u2/a.
	if got := e.Provider.Calls.Load() - calls; got != 3 {
		t.Errorf("%d provider calls, want 3", got)
	}
	for _, id := range ids {
		var user, mid string
		fmt.Sscanf(id, "%2s/%s", &user, &mid)
		v, err := e.Queries.Get(ctx, user, mid)
		if err != nil || v.Embedding.Status != memory.StatusEmbedded {
			t.Errorf("%s: %+v, %v", id, v.Embedding, err)
		}
	}
	events, _ := e.Store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	last := events[len(events)-1]
	if last.Type != "MemoryEmbedded" || last.Actor.Kind != domain.ActorSystem || last.Actor.UserID != "u1" {
		t.Errorf("queue event = %s by %+v", last.Type, last.Actor)
	}
	calls = e.Provider.Calls.Load()
	if n, err := e.Queue.Drain(ctx); n != 0 || err != nil || e.Provider.Calls.Load() != calls {
		t.Errorf("an empty queue did work: %d, %v", n, err)
	}
}

func TestEmbedQueueRunRetriesWithBackoff(t *testing.T) {
	e := memenvtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.Provider.Down.Store(true)
	c, err := e.Memories.Create(ctx, memenvtest.Meta("u1"), "a", memenvtest.Note("embedded once the provider is back"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Queue.Run(ctx) }()
	// Without any kick, the queue keeps retrying while the provider fails.
	before := e.Provider.Calls.Load()
	memWaitFor(t, "two retries", func() bool { return e.Provider.Calls.Load() >= before+2 })
	e.Provider.Down.Store(false)
	memWaitFor(t, "the memory is embedded", func() bool {
		v, err := e.Queries.Get(ctx, "u1", c.ID)
		return err == nil && v.Embedding.Status == memory.StatusEmbedded
	})
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run = %v", err)
	}
}

func TestEmbedQueueModelNotServed(t *testing.T) {
	e := memenvtest.New(t)
	ctx := context.Background()
	c, err := e.Memories.Create(ctx, memenvtest.Meta("u1"), "a", memenvtest.Note("x"))
	if err != nil {
		t.Fatal(err)
	}
	// The agent moves to a model no provider here serves: its memories
	// wait for vectors, and the queue reports the failure instead of
	// looping.
	ref := memory.AgentRef{UserID: "u1", AgentID: "a"}
	if _, err := e.Writer.Append(ctx, memory.AgentStream("u1", "a"), domain.ExpectAny, memenvtest.Meta("u1"),
		memory.AgentModelSwitched{AgentRef: ref, Model: "text-embedding-3-small", Dimensions: 1536}); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.Queries.Get(ctx, "u1", c.ID); v.Embedding.Status != memory.StatusPending || v.Embedding.Model != "text-embedding-3-small" {
		t.Errorf("after the switch: %+v", v.Embedding)
	}
	if n, err := e.Queue.Drain(ctx); n != 0 || err == nil {
		t.Errorf("Drain = %d, %v; want a model error", n, err)
	}
}

// TestEmbedQueueKickNeverBlocks: writes kick the queue on their request
// path, so a kick returns at once even when nobody runs the queue and
// kicks pile up.
func TestEmbedQueueKickNeverBlocks(t *testing.T) {
	e := memenvtest.New(t)
	kicked := make(chan struct{})
	go func() {
		defer close(kicked)
		for range 100 {
			e.Queue.Kick()
		}
	}()
	select {
	case <-kicked:
	case <-time.After(time.Second):
		t.Fatal("Kick blocked: 100 kicks to a queue nobody runs did not return within 1s")
	}
}

func memWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestEmbedQueueSplitsAppendsOverTheStoreLimit: the vectors of one agent's
// pending memories are more than one KurrentDB append may carry (its
// MaxAppendSize, here 16 KiB on the test server and the adapter alike); the
// queue records them in parts instead of failing, each memory once.
func TestEmbedQueueSplitsAppendsOverTheStoreLimit(t *testing.T) {
	const limit = 16 << 10
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{MaxAppendSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	log, err := kurrentdb.Open(t.Context(), kurrentdb.Config{URL: srv.URL(), MaxAppendSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	e := memenvtest.NewOn(t, log)
	ctx := t.Context()

	e.Provider.Down.Store(true)
	const n = 64 // their vectors, of 384 dimensions, are several times the limit
	var ids []string
	for i := range n {
		c, err := e.Memories.CreateBatch(ctx, memenvtest.Meta("u1"), "a", []commands.MemoryInput{memenvtest.Note(fmt.Sprintf("note %d about the release", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c[0].ID)
	}
	e.Provider.Down.Store(false)
	if got, err := e.Queue.Drain(ctx); err != nil || got != n {
		t.Fatalf("Drain = %d, %v; want %d", got, err, n)
	}
	embedded := map[string]int{}
	events, err := e.Store.ReadStream(ctx, memory.AgentStream("u1", "a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type != (memory.MemoryEmbedded{}).EventType() {
			continue
		}
		var p memory.MemoryEmbedded
		if err := ev.Decode(&p); err != nil {
			t.Fatal(err)
		}
		embedded[p.MemoryID]++
	}
	for _, id := range ids {
		if embedded[id] != 1 {
			t.Errorf("memory %s has %d vectors recorded, want 1", id, embedded[id])
		}
		if v, err := e.Queries.Get(ctx, "u1", id); err != nil || v.Embedding.Status != memory.StatusEmbedded {
			t.Errorf("%s: %+v, %v", id, v.Embedding, err)
		}
	}
}
