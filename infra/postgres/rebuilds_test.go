package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/postgres"
)

// TestRebuildRecordLifecycle: a request opens a rebuild once (a second
// request meanwhile is answered with the open one), the holder starts and
// finishes it, a node that lost the lease cannot close a rebuild the next
// holder restarted, and a closed rebuild lets a new one open.
func TestRebuildRecordLifecycle(t *testing.T) {
	ctx := context.Background()
	r := postgres.NewRebuilds(openDB(t))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, err := r.Get(ctx, "keyword"); err != nil || got.ID != "" {
		t.Fatalf("never rebuilt: %+v, %v; want the zero value", got, err)
	}
	first, opened, err := r.Request(ctx, "keyword", "node-b")
	must(err)
	if !opened || first.ID == "" || first.State != domain.RebuildRequested || first.RequestedBy != "node-b" {
		t.Fatalf("first request: %+v opened %v", first, opened)
	}
	again, opened, err := r.Request(ctx, "keyword", "node-c")
	must(err)
	if opened || again.ID != first.ID {
		t.Fatalf("second request while open: %+v opened %v, want the open one %s", again, opened, first.ID)
	}
	if other, opened, err := r.Request(ctx, "audit", "node-c"); err != nil || !opened || other.ID == first.ID {
		t.Fatalf("another projection's request: %+v opened %v, %v", other, opened, err)
	}
	must(r.Start(ctx, "keyword", first.ID, "node-a"))
	// node-a loses its lease part-way; node-c takes it and starts again.
	must(r.Start(ctx, "keyword", first.ID, "node-c"))
	must(r.Finish(ctx, "keyword", first.ID, "node-a", 10, ""))
	if got, _ := r.Get(ctx, "keyword"); got.State != domain.RebuildRunning || got.Node != "node-c" {
		t.Fatalf("after a stale finish: %+v, want running on node-c", got)
	}
	must(r.Finish(ctx, "keyword", first.ID, "node-c", 42, ""))
	got, err := r.Get(ctx, "keyword")
	must(err)
	if want := (domain.ProjectionRebuild{ID: first.ID, State: domain.RebuildDone, RequestedBy: "node-b", Node: "node-c", Events: 42}); got != want {
		t.Fatalf("finished: %+v, want %+v", got, want)
	}
	next, opened, err := r.Request(ctx, "keyword", "node-a")
	must(err)
	if !opened || next.ID == first.ID {
		t.Fatalf("request after the close: %+v opened %v, want a new rebuild", next, opened)
	}
	must(r.Start(ctx, "keyword", next.ID, "node-a"))
	must(r.Finish(ctx, "keyword", next.ID, "node-a", 3, "meilisearch: unreachable"))
	if got, _ := r.Get(ctx, "keyword"); got.State != domain.RebuildFailed || got.Error != "meilisearch: unreachable" {
		t.Fatalf("failed: %+v", got)
	}
}

// TestChangesAreNotifiedAtCommit: Listen names a projection when a
// checkpoint or a rebuild record of it commits, and first says it
// started listening.
func TestChangesAreNotifiedAtCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db := openDB(t)
	// Channels are per database and the tests' schemas share one: this
	// test's projection names are its own.
	name := fmt.Sprintf("audit-%d", time.Now().UnixNano())
	got := make(chan string, 16)
	go func() {
		_ = postgres.NewChanges(db).Listen(ctx, func(p string) {
			if p == "" || p == name {
				got <- p
			}
		})
	}()
	expect := func(want, after string) {
		t.Helper()
		select {
		case p := <-got:
			if p != want {
				t.Fatalf("after %s: notified %q, want %q", after, p, want)
			}
		case <-ctx.Done():
			t.Fatalf("after %s: no notification", after)
		}
	}
	expect("", "starting")
	r := postgres.NewRebuilds(db)
	rb, _, err := r.Request(ctx, name, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	expect(name, "a rebuild request")
	if err := r.Start(ctx, name, rb.ID, "node-a"); err != nil {
		t.Fatal(err)
	}
	expect(name, "a rebuild's start")
	state := postgres.NewKeywordState(db, name)
	noop := func(context.Context, domain.KeywordStateTx, domain.Event) error { return nil }
	if err := state.ApplyKeyword(ctx, []domain.Event{{Position: 1}}, noop, nil); err != nil {
		t.Fatal(err)
	}
	expect(name, "a checkpoint's commit")
	failing := func(context.Context, domain.KeywordStateTx, domain.Event) error { return fmt.Errorf("refused") }
	if err := state.ApplyKeyword(ctx, []domain.Event{{Position: 2}}, failing, nil); err == nil {
		t.Fatal("a failing apply succeeded")
	}
	if err := state.ResetKeyword(ctx); err != nil {
		t.Fatal(err)
	}
	expect(name, "a reset (the failed apply, rolled back, notified nothing)")
}
