// Package eventstoretest is the conformance suite every domain.EventStore
// adapter (SQLite, PostgreSQL, KurrentDB) must pass.
package eventstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	t.Run("ConcurrentWritersFollowersMissNothing", func(t *testing.T) { concurrentWritersFollowersMissNothing(t, open(t)) })
	t.Run("SubscribeCatchesUpAndFollows", func(t *testing.T) { subscribeCatchesUpAndFollows(t, open(t)) })
	t.Run("ReadRange", func(t *testing.T) { readRange(t, open(t)) })
	t.Run("MetadataRoundTrip", func(t *testing.T) { metadataRoundTrip(t, open(t)) })
	t.Run("Claims", func(t *testing.T) { claims(t, open(t)) })
	t.Run("ConcurrentClaimsOneWinner", func(t *testing.T) { concurrentClaimsOneWinner(t, open(t)) })
	t.Run("AppendStreams", func(t *testing.T) { appendStreams(t, open(t)) })
}

// RunAtomicAcrossStreams is the part of the suite for the logs whose
// AppendStreams commits every part or none (SQLite, PostgreSQL, KurrentDB
// 25.1 and later; not KurrentDB before 25.1, see domain.EventStore).
func RunAtomicAcrossStreams(t *testing.T, open func(t *testing.T) domain.EventStore) {
	t.Run("AppendStreamsAllOrNothing", func(t *testing.T) { appendStreamsAllOrNothing(t, open(t)) })
}

// appendStreams: the parts land in order, one result per part; a part
// refused as the first stores nothing; an empty call or a stream named
// twice is refused.
func appendStreams(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	res, err := s.AppendStreams(ctx, []domain.StreamAppend{
		{Stream: "m-1", Expected: domain.ExpectNoStream, Events: newEvents(2, 0)},
		{Stream: "m-2", Expected: domain.ExpectAny, Events: newEvents(3, 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].NextExpectedVersion != 1 || res[1].NextExpectedVersion != 2 || res[0].LastPosition >= res[1].LastPosition {
		t.Fatalf("results %+v, want versions 1 and 2, the first part before the second", res)
	}
	all, err := s.ReadAll(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	for _, e := range all {
		if e.Stream == "m-1" || e.Stream == "m-2" {
			order = append(order, payloadN(t, e))
		}
	}
	if fmt.Sprint(order) != "[0 1 2 3 4]" {
		t.Fatalf("the log holds %v, want the parts' events in order [0 1 2 3 4]", order)
	}
	if all[len(all)-1].Position != res[1].LastPosition {
		t.Fatalf("last position %d, want the second part's %d", all[len(all)-1].Position, res[1].LastPosition)
	}
	_, err = s.AppendStreams(ctx, []domain.StreamAppend{
		{Stream: "m-1", Expected: 0, Events: newEvents(1, 5)},
		{Stream: "m-3", Expected: domain.ExpectNoStream, Events: newEvents(1, 6)},
	})
	if !errors.Is(err, domain.ErrWrongExpectedVersion) {
		t.Fatalf("a stale first part: err = %v, want ErrWrongExpectedVersion", err)
	}
	for _, bad := range [][]domain.StreamAppend{
		nil,
		{{Stream: "m-3", Expected: domain.ExpectAny}},
		{{Stream: "m-3", Expected: domain.ExpectAny, Events: newEvents(1, 7)}, {Stream: "m-3", Expected: domain.ExpectAny, Events: newEvents(1, 8)}},
	} {
		if _, err := s.AppendStreams(ctx, bad); err == nil {
			t.Fatalf("AppendStreams(%d parts) stored, want refused", len(bad))
		}
	}
	if events, _ := s.ReadStream(ctx, "m-3", 0); len(events) != 0 {
		t.Fatalf("m-3 holds %d events, want none (every append to it was refused)", len(events))
	}
}

// appendStreamsAllOrNothing: a later part refused (a stale version, a
// taken claim, a key that an earlier part claims too) stores nothing of
// the parts before it.
func appendStreamsAllOrNothing(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	if _, err := s.Append(ctx, "n-0", domain.ExpectNoStream, claiming(0, "memory/taken")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		later domain.StreamAppend
		want  error
	}{
		{"a stale version", domain.StreamAppend{Stream: "n-0", Expected: domain.ExpectNoStream, Events: newEvents(1, 2)}, domain.ErrWrongExpectedVersion},
		{"a taken claim", domain.StreamAppend{Stream: "n-2", Expected: domain.ExpectNoStream, Events: claiming(2, "memory/taken")}, domain.ErrClaimTaken},
		{"a key of the first part", domain.StreamAppend{Stream: "n-2", Expected: domain.ExpectNoStream, Events: claiming(2, "memory/first")}, domain.ErrClaimTaken},
	} {
		_, err := s.AppendStreams(ctx, []domain.StreamAppend{
			{Stream: "n-1", Expected: domain.ExpectNoStream, Events: claiming(1, "memory/first")},
			c.later,
		})
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: err = %v, want %v", c.name, err, c.want)
		}
		for _, stream := range []string{"n-1", "n-2"} {
			if events, _ := s.ReadStream(ctx, stream, 0); len(events) != 0 {
				t.Fatalf("%s: %s holds %d events, want none: the append was refused whole", c.name, stream, len(events))
			}
		}
	}
	// The first part's key stayed free.
	if _, err := s.Append(ctx, "n-1", domain.ExpectNoStream, claiming(3, "memory/first")); err != nil {
		t.Fatalf("the key of a refused append: %v", err)
	}
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

// concurrentWritersFollowersMissNothing appends from many writers at once
// while a subscriber and a tight ReadAll poller follow the log. A store
// whose positions can become visible out of order (a reader sees 11 before
// 10 commits, then reads after 11) makes a follower skip an event forever;
// here every follower must end with exactly the log's events, in order.
func concurrentWritersFollowersMissNothing(t *testing.T, s domain.EventStore) {
	const writers, appendsEach = 8, 40
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var subscribed []uint64
	var subMu sync.Mutex
	subCtx, stopSub := context.WithCancel(ctx)
	subDone := make(chan error, 1)
	go func() {
		subDone <- s.SubscribeAll(subCtx, 0, func(_ context.Context, events []domain.Event) error {
			subMu.Lock()
			defer subMu.Unlock()
			for _, e := range events {
				subscribed = append(subscribed, e.Position)
			}
			return nil
		})
	}()
	polled := make(chan []uint64, 1)
	pollCtx, stopPoll := context.WithCancel(ctx)
	go func() {
		var seen []uint64
		var after uint64
		for pollCtx.Err() == nil {
			events, err := s.ReadAll(pollCtx, after, 1000)
			if err != nil {
				break
			}
			for _, e := range events {
				seen = append(seen, e.Position)
				after = e.Position
			}
		}
		polled <- seen
	}()

	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range appendsEach {
				if _, err := s.Append(ctx, fmt.Sprintf("w-%d", w), domain.ExpectAny, newEvents(1+i%3, i)); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var logged []uint64
	for after := uint64(0); ; {
		events, err := s.ReadAll(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 0 {
			break
		}
		for _, e := range events {
			logged = append(logged, e.Position)
			after = e.Position
		}
	}
	// Both followers have read up to head before they are stopped.
	for {
		subMu.Lock()
		n := len(subscribed)
		reached := n > 0 && subscribed[n-1] >= head
		subMu.Unlock()
		if reached {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("subscriber stalled below head %d", head)
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(50 * time.Millisecond) // the poller's reads run back to back
	stopPoll()
	stopSub()
	<-subDone
	seenByPoller := <-polled
	for name, got := range map[string][]uint64{"subscriber": subscribed, "poller": seenByPoller} {
		if fmt.Sprint(got) != fmt.Sprint(logged) {
			t.Errorf("%s saw %d events, the log holds %d: a follower skipped or repeated events (first difference at %d)", name, len(got), len(logged), firstDifference(got, logged))
		}
	}
}

// firstDifference is the index where a and b first differ.
func firstDifference(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
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

// readRange: a bounded read hands the events of its range in order and
// returns, and fails clearly, without waiting, when the log ends before
// its bound.
func readRange(t *testing.T, s domain.EventStore) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Append(ctx, "r-1", domain.ExpectAny, newEvents(10, 0)); err != nil {
		t.Fatal(err)
	}
	all, err := s.ReadAll(ctx, 0, 10)
	if err != nil || len(all) != 10 {
		t.Fatalf("ReadAll: %d events (%v), want 10", len(all), err)
	}
	pos := func(n int) uint64 { return all[n].Position }
	cases := []struct {
		name         string
		after, until uint64
		want         []int // the payloads handed, in order
		wantErr      error
	}{
		{name: "the whole log", after: 0, until: pos(9), want: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "a range inside it", after: pos(2), until: pos(6), want: []int{3, 4, 5, 6}},
		{name: "an empty range", after: pos(4), until: pos(4)},
		{name: "past the log's end", after: pos(7), until: pos(9) + 1000, want: []int{8, 9}, wantErr: domain.ErrLogEndsBefore},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []int
			err := s.ReadRange(ctx, c.after, c.until, func(_ context.Context, events []domain.Event) error {
				for _, e := range events {
					got = append(got, payloadN(t, e))
				}
				return nil
			})
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("ReadRange(%d, %d) returned %v, want %v", c.after, c.until, err, c.wantErr)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("ReadRange(%d, %d) handed %v, want %v", c.after, c.until, got, c.want)
			}
		})
	}
	boom := errors.New("handler failed")
	err = s.ReadRange(ctx, 0, pos(9), func(context.Context, []domain.Event) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("ReadRange returned %v, want the handler's error", err)
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
	e.Source = domain.SourceMCP
	if _, err := s.Append(ctx, "f-1", domain.ExpectAny, []domain.NewEvent{e}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "f-1", 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %v", err)
	}
	g := got[0]
	if g.ID != e.ID || !g.Time.Equal(at) || g.SchemaVersion != 3 || g.Actor != e.Actor || g.RequestID != "req-1" || g.Source != domain.SourceMCP || g.Type != "TestHappened" || payloadN(t, g) != 7 || g.Position == 0 {
		t.Fatalf("round trip mismatch: %+v", g)
	}
}

// claiming is one event of payload n claiming keys.
func claiming(n int, keys ...string) []domain.NewEvent {
	e := newEvents(1, n)
	e[0].Claims = keys
	return e
}

// claims: a key is taken by the first event that claims it, in any
// stream, for good; an append claiming a taken key (or one key twice)
// stores nothing, and its other keys stay free.
func claims(t *testing.T, s domain.EventStore) {
	ctx := context.Background()
	cases := []struct {
		name     string
		stream   string
		expected int64
		events   []domain.NewEvent
		taken    string // the key refused, "" for a stored append, "version" for a wrong expected version
	}{
		{"a first claim", "k-1", domain.ExpectNoStream, claiming(1, "memory/a"), ""},
		{"the key again, in another stream", "k-2", domain.ExpectNoStream, claiming(2, "memory/a"), "memory/a"},
		{"the key again, in its own stream", "k-1", 0, claiming(3, "memory/a"), "memory/a"},
		{"a free key beside a taken one", "k-2", domain.ExpectNoStream, append(claiming(4, "memory/b"), claiming(5, "memory/a")...), "memory/a"},
		{"one key twice in one append", "k-2", domain.ExpectNoStream, append(claiming(6, "memory/c"), claiming(7, "memory/c")...), "memory/c"},
		{"the free key, after the refusals", "k-2", domain.ExpectNoStream, claiming(8, "memory/b"), ""},
		{"events without claims beside one", "k-2", 0, append(newEvents(1, 9), claiming(10, "memory/c")...), ""},
		{"a claim with any version", "k-3", domain.ExpectAny, claiming(11, "memory/d", "memory/e"), ""},
		{"a key of several, with any version", "k-3", domain.ExpectAny, claiming(12, "memory/f", "memory/e"), "memory/e"},
		// The stream's version is checked first, as without claims.
		{"a taken key at a stale version", "k-1", domain.ExpectNoStream, claiming(13, "memory/a"), "version"},
	}
	want := map[string][]int{}
	for _, c := range cases {
		_, err := s.Append(ctx, c.stream, c.expected, c.events)
		if c.taken == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for _, e := range c.events {
				var p testPayload
				_ = json.Unmarshal(e.Payload, &p)
				want[c.stream] = append(want[c.stream], p.N)
			}
			continue
		}
		if c.taken == "version" {
			if !errors.Is(err, domain.ErrWrongExpectedVersion) || errors.Is(err, domain.ErrClaimTaken) {
				t.Fatalf("%s: err = %v, want ErrWrongExpectedVersion", c.name, err)
			}
			continue
		}
		var taken *domain.ClaimTakenError
		if !errors.As(err, &taken) || taken.Key != c.taken || !errors.Is(err, domain.ErrClaimTaken) {
			t.Fatalf("%s: err = %v, want the claim of %s refused", c.name, err, c.taken)
		}
	}
	for _, stream := range []string{"k-1", "k-2", "k-3"} {
		events, err := s.ReadStream(ctx, stream, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, e := range events {
			got = append(got, payloadN(t, e))
		}
		if fmt.Sprint(got) != fmt.Sprint(want[stream]) {
			t.Fatalf("stream %s holds %v, want %v (a refused append stores nothing)", stream, got, want[stream])
		}
	}
	all, err := s.ReadAll(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("the log holds %d events, want the 5 appended", len(all))
	}
}

// concurrentClaimsOneWinner: appends to different streams claiming one
// key at once, round after round; exactly one wins each round, the
// others are refused with the key, and the log holds the winner's event
// alone.
func concurrentClaimsOneWinner(t *testing.T, s domain.EventStore) {
	const rounds, appenders = 20, 6
	ctx := context.Background()
	var winners []int
	for round := range rounds {
		key := fmt.Sprintf("memory/round-%d", round)
		won := make([]bool, appenders)
		var wg sync.WaitGroup
		for i := range appenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := fmt.Sprintf("r-%d", i)
				expected := int64(len(winnersOf(winners, i))) - 1
				_, err := s.Append(ctx, stream, expected, claiming(round*appenders+i, key))
				var taken *domain.ClaimTakenError
				switch {
				case err == nil:
					won[i] = true
				case errors.As(err, &taken) && taken.Key == key:
				default:
					t.Errorf("round %d, appender %d: %v", round, i, err)
				}
			}()
		}
		wg.Wait()
		n := 0
		for i, w := range won {
			if w {
				n++
				winners = append(winners, i)
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d appends claiming %s won, want exactly 1", round, n, key)
		}
	}
	all, err := s.ReadAll(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != rounds {
		t.Fatalf("the log holds %d events, want the %d winners'", len(all), rounds)
	}
	for round, e := range all {
		if want := round*appenders + winners[round]; payloadN(t, e) != want || e.Stream != fmt.Sprintf("r-%d", winners[round]) {
			t.Fatalf("round %d: the log holds event %d of %s, want the winner's %d", round, payloadN(t, e), e.Stream, want)
		}
	}
}

// winnersOf are the rounds appender i won: its stream's events.
func winnersOf(winners []int, i int) []int {
	var out []int
	for round, w := range winners {
		if w == i {
			out = append(out, round)
		}
	}
	return out
}
