// Package leasetest is the conformance suite of domain.ProjectionLeases:
// what the projection engine relies on when several nodes share a
// projection's store. An adapter's test calls Run with a Harness over a
// fresh lease service per test.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Harness opens the adapter under test.
type Harness struct {
	// New returns a fresh, empty lease service for one test; Node opens
	// the leases of one node of it, named name.
	New func(t *testing.T) Service
}

// Service is one lease service shared by several nodes.
type Service interface {
	Node(t *testing.T, name string) domain.ProjectionLeases
	// Sever ends the session behind the projection's held lease from
	// outside, as a crashed node or a cut network does.
	Sever(t testing.TB, projection string)
}

// takeover bounds how long a waiting node may take to get a lease its
// holder gave up or lost.
const takeover = 5 * time.Second

// Run runs every case.
func Run(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s Service)
	}{
		{"the first node to ask holds the lease and is named its holder", firstHolds},
		{"a second node waits until the holder releases, then holds it", secondWaitsForRelease},
		{"leases of different projections are independent", independentProjections},
		{"of nodes asking at once for a new projection's lease, exactly one gets it", racingNodes},
		{"acquire gives up when its context ends, holding nothing", acquireHonoursContext},
		{"release closes Lost", releaseClosesLost},
		{"a severed holder loses its lease and another node takes it over", severedHolderLoses},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, h.New(t)) })
	}
}

func acquire(t *testing.T, l domain.ProjectionLeases, projection string) domain.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), takeover)
	defer cancel()
	lease, err := l.Acquire(ctx, projection)
	if err != nil {
		t.Fatalf("acquire %s: %v", projection, err)
	}
	t.Cleanup(func() { _ = lease.Release(context.Background()) })
	return lease
}

func holder(t *testing.T, l domain.ProjectionLeases, projection string) string {
	t.Helper()
	h, err := l.Holder(context.Background(), projection)
	if err != nil {
		t.Fatalf("holder of %s: %v", projection, err)
	}
	return h
}

// acquireLater starts an Acquire in the background.
func acquireLater(l domain.ProjectionLeases, projection string) (<-chan domain.Lease, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan domain.Lease, 1)
	go func() {
		lease, err := l.Acquire(ctx, projection)
		if err == nil {
			got <- lease
		}
	}()
	return got, cancel
}

func firstHolds(t *testing.T, s Service) {
	a, b := s.Node(t, "node-a"), s.Node(t, "node-b")
	if h := holder(t, b, "keyword"); h != "" {
		t.Fatalf("holder before any acquire = %q, want none", h)
	}
	acquire(t, a, "keyword")
	if h := holder(t, b, "keyword"); h != "node-a" {
		t.Fatalf("holder seen by another node = %q, want node-a", h)
	}
}

func secondWaitsForRelease(t *testing.T, s Service) {
	a, b := s.Node(t, "node-a"), s.Node(t, "node-b")
	held := acquire(t, a, "keyword")
	got, cancel := acquireLater(b, "keyword")
	defer cancel()
	select {
	case <-got:
		t.Fatal("a second node acquired a held lease")
	case <-time.After(300 * time.Millisecond):
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case lease := <-got:
		defer lease.Release(context.Background())
	case <-time.After(takeover):
		t.Fatalf("the waiting node did not get the released lease within %s", takeover)
	}
	if h := holder(t, a, "keyword"); h != "node-b" {
		t.Fatalf("holder after the handover = %q, want node-b", h)
	}
}

func racingNodes(t *testing.T, s Service) {
	const nodes = 6
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	results := make(chan error, nodes)
	for i := range nodes {
		l := s.Node(t, fmt.Sprintf("node-%d", i))
		go func() {
			lease, err := l.Acquire(ctx, "fresh")
			if err == nil {
				t.Cleanup(func() { _ = lease.Release(context.Background()) })
			}
			results <- err
		}()
	}
	held := 0
	for range nodes {
		switch err := <-results; {
		case err == nil:
			held++
		case !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("a racing acquire failed: %v, want it to wait", err)
		}
	}
	if held != 1 {
		t.Fatalf("%d of %d racing nodes hold the lease, want exactly one", held, nodes)
	}
}

func independentProjections(t *testing.T, s Service) {
	a, b := s.Node(t, "node-a"), s.Node(t, "node-b")
	acquire(t, a, "keyword")
	acquire(t, b, "vectors")
	if ha, hb := holder(t, a, "keyword"), holder(t, a, "vectors"); ha != "node-a" || hb != "node-b" {
		t.Fatalf("holders = %q, %q; want node-a, node-b", ha, hb)
	}
}

func acquireHonoursContext(t *testing.T, s Service) {
	a, b := s.Node(t, "node-a"), s.Node(t, "node-b")
	held := acquire(t, a, "keyword")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if lease, err := b.Acquire(ctx, "keyword"); !errors.Is(err, context.DeadlineExceeded) {
		if lease != nil {
			_ = lease.Release(context.Background())
		}
		t.Fatalf("acquire of a held lease with a deadline: %v, want context.DeadlineExceeded", err)
	}
	// The abandoned wait left nothing behind: after the release a third
	// node gets the lease, not the node that gave up.
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	acquire(t, s.Node(t, "node-c"), "keyword")
	if h := holder(t, a, "keyword"); h != "node-c" {
		t.Fatalf("holder = %q, want node-c", h)
	}
}

func releaseClosesLost(t *testing.T, s Service) {
	held := acquire(t, s.Node(t, "node-a"), "keyword")
	select {
	case <-held.Lost():
		t.Fatal("Lost is closed while the lease is held")
	default:
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Lost():
	case <-time.After(takeover):
		t.Fatal("Lost is still open after Release")
	}
	if h := holder(t, s.Node(t, "node-b"), "keyword"); h != "" {
		t.Fatalf("holder after release = %q, want none", h)
	}
}

func severedHolderLoses(t *testing.T, s Service) {
	a, b := s.Node(t, "node-a"), s.Node(t, "node-b")
	held := acquire(t, a, "keyword")
	got, cancel := acquireLater(b, "keyword")
	defer cancel()
	start := time.Now()
	s.Sever(t, "keyword")
	select {
	case <-held.Lost():
	case <-time.After(takeover):
		t.Fatalf("the severed holder's Lost is still open after %s", takeover)
	}
	select {
	case lease := <-got:
		defer lease.Release(context.Background())
	case <-time.After(takeover):
		t.Fatalf("no takeover within %s of the holder's session ending", takeover)
	}
	t.Logf("takeover %s after the holder's session was ended", time.Since(start).Round(time.Millisecond))
	if h := holder(t, a, "keyword"); h != "node-b" {
		t.Fatalf("holder after the takeover = %q, want node-b", h)
	}
}
