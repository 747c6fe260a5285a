package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
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
