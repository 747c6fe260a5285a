// Package eventstoretest is the conformance suite every domain.EventStore
// adapter (SQLite, PostgreSQL, KurrentDB) must pass.
package eventstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Run runs the suite. open returns a fresh, empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) domain.EventStore) {
	t.Run("AppendAndReadStream", func(t *testing.T) { appendAndReadStream(t, open(t)) })
	t.Run("ExpectedVersion", func(t *testing.T) { expectedVersion(t, open(t)) })
	t.Run("ReadAllOrderAndPaging", func(t *testing.T) { readAllOrderAndPaging(t, open(t)) })
	t.Run("ConcurrentAppendsOneWinner", func(t *testing.T) { concurrentAppendsOneWinner(t, open(t)) })
	t.Run("SubscribeCatchesUpAndFollows", func(t *testing.T) { subscribeCatchesUpAndFollows(t, open(t)) })
	t.Run("MetadataRoundTrip", func(t *testing.T) { metadataRoundTrip(t, open(t)) })
}

type testPayload struct {
	N int `json:"n"`
}

func newEvents(n, from int) []domain.NewEvent {
	out := make([]domain.NewEvent, n)
	for i := range out {
		raw, _ := json.Marshal(testPayload{N: from + i})
		out[i] = domain.NewEvent{Type: "TestHappened", SchemaVersion: 1, Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}, Payload: raw}
	}
	return out
}

func payloadN(t *testing.T, e domain.Event) int {
	t.Helper()
	var p testPayload
	if err := e.Decode(&p); err != nil {
		t.Fatalf("decode %s: %v", e.ID, err)
	}
	return p.N
}

func appendAndReadStream(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	res, err := s.Append(ctx, "a-1", domain.ExpectNoStream, newEvents(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	if res.NextExpectedVersion != 2 {
		t.Fatalf("next expected version = %d, want 2", res.NextExpectedVersion)
	}
	if _, err := s.Append(ctx, "a-1", 2, newEvents(2, 3)); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "a-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("read %d events, want 5", len(got))
	}
	for i, e := range got {
		if e.Version != uint64(i) || payloadN(t, e) != i || e.Stream != "a-1" {
			t.Fatalf("event %d: version %d payload %d stream %q", i, e.Version, payloadN(t, e), e.Stream)
		}
	}
	tail, err := s.ReadStream(ctx, "a-1", 3)
	if err != nil || len(tail) != 2 || tail[0].Version != 3 {
		t.Fatalf("read from version 3: %d events, err %v", len(tail), err)
	}
	none, err := s.ReadStream(ctx, "missing", 0)
	if err != nil || len(none) != 0 {
		t.Fatalf("missing stream: %d events, err %v", len(none), err)
	}
}

func expectedVersion(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	cases := []struct {
		name     string
		expected int64
		wantErr  bool
	}{
		{"no stream on new stream", domain.ExpectNoStream, false},
		{"no stream on existing stream", domain.ExpectNoStream, true},
		{"exact version", 0, false},
		{"stale version", 0, true},
		{"any", domain.ExpectAny, false},
		{"future version", 99, true},
	}
	for _, c := range cases {
		_, err := s.Append(ctx, "b-1", c.expected, newEvents(1, 0))
		if c.wantErr != (err != nil) {
			t.Fatalf("%s: err = %v, want error %v", c.name, err, c.wantErr)
		}
		if err != nil && !errors.Is(err, domain.ErrWrongExpectedVersion) {
			t.Fatalf("%s: error %v is not ErrWrongExpectedVersion", c.name, err)
		}
	}
	events, _ := s.ReadStream(ctx, "b-1", 0)
	if len(events) != 3 {
		t.Fatalf("stream holds %d events, want 3 (failed appends must write nothing)", len(events))
	}
}

func readAllOrderAndPaging(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		if _, err := s.Append(ctx, fmt.Sprintf("c-%d", i%3), domain.ExpectAny, newEvents(1, i)); err != nil {
			t.Fatal(err)
		}
	}
	var all []domain.Event
	var after uint64
	for {
		page, err := s.ReadAll(ctx, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Position
	}
	if len(all) != 10 {
		t.Fatalf("read %d events, want 10", len(all))
	}
	for i, e := range all {
		if payloadN(t, e) != i {
			t.Fatalf("event %d has payload %d: global order broken", i, payloadN(t, e))
		}
		if i > 0 && e.Position <= all[i-1].Position {
			t.Fatalf("positions not increasing at %d", i)
		}
	}
	head, err := s.Head(ctx)
	if err != nil || head != all[9].Position {
		t.Fatalf("head = %d (%v), want %d", head, err, all[9].Position)
	}
}

func concurrentAppendsOneWinner(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	if _, err := s.Append(ctx, "d-1", domain.ExpectNoStream, newEvents(1, 0)); err != nil {
		t.Fatal(err)
	}
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := s.Append(ctx, "d-1", 0, newEvents(1, i))
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, domain.ErrWrongExpectedVersion):
				conflicts.Add(1)
			default:
				t.Errorf("append %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != 19 {
		t.Fatalf("wins %d conflicts %d, want 1 and 19", wins.Load(), conflicts.Load())
	}
}

func subscribeCatchesUpAndFollows(t *testing.T, s domain.EventStore) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Append(ctx, "e-1", domain.ExpectAny, newEvents(5, 0)); err != nil {
		t.Fatal(err)
	}
	first, _ := s.ReadAll(ctx, 0, 1)
	got := make(chan int, 100)
	done := make(chan error, 1)
	subCtx, stop := context.WithCancel(ctx)
	go func() {
		done <- s.SubscribeAll(subCtx, first[0].Position, func(_ context.Context, events []domain.Event) error {
			for _, e := range events {
				got <- payloadN(t, e)
			}
			return nil
		})
	}()
	if _, err := s.Append(ctx, "e-2", domain.ExpectAny, newEvents(3, 5)); err != nil {
		t.Fatal(err)
	}
	for want := 1; want < 8; want++ {
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("subscription delivered %d, want %d", n, want)
			}
		case <-ctx.Done():
			t.Fatalf("subscription stalled before event %d", want)
		}
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("SubscribeAll returned %v, want context.Canceled", err)
	}
	boom := errors.New("handler failed")
	err := s.SubscribeAll(ctx, 0, func(context.Context, []domain.Event) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("SubscribeAll returned %v, want the handler's error", err)
	}
}

func metadataRoundTrip(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	e := newEvents(1, 7)[0]
	e.ID = "0193a1f0-0000-7000-8000-000000000001"
	e.Time = at
	e.SchemaVersion = 3
	e.Actor = domain.Actor{Kind: domain.ActorKey, ID: "key-1", UserID: "user-1"}
	e.RequestID = "req-1"
	if _, err := s.Append(ctx, "f-1", domain.ExpectAny, []domain.NewEvent{e}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "f-1", 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %v", err)
	}
	g := got[0]
	if g.ID != e.ID || !g.Time.Equal(at) || g.SchemaVersion != 3 || g.Actor != e.Actor || g.RequestID != "req-1" || g.Type != "TestHappened" || payloadN(t, g) != 7 || g.Position == 0 {
		t.Fatalf("round trip mismatch: %+v", g)
	}
}
