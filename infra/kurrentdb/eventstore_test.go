package kurrentdb_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	kdb "github.com/kurrent-io/KurrentDB-Client-Go/kurrentdb"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventlog"
	"github.com/engram-memory/engram/infra/eventstoretest"
	"github.com/engram-memory/engram/infra/kurrentdb"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
)

// target is the KurrentDB this package's tests run against: the one at
// ENGRAM_TEST_KURRENTDB_URL (credentials in ENGRAM_KURRENTDB_USERNAME and
// ENGRAM_KURRENTDB_PASSWORD) or else an in-memory test server. Both are
// shared by all tests, which keep apart by stream prefix, exactly as
// several Engram deployments sharing one KurrentDB would.
var target kurrentdb.Config

var prefixSeq atomic.Int64

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	if url := os.Getenv("ENGRAM_TEST_KURRENTDB_URL"); url != "" {
		target = kurrentdb.Config{URL: url, Username: os.Getenv("ENGRAM_KURRENTDB_USERNAME"), Password: os.Getenv("ENGRAM_KURRENTDB_PASSWORD")}
		fmt.Fprintln(os.Stderr, "kurrentdb tests: against the real KurrentDB at ENGRAM_TEST_KURRENTDB_URL")
		return m.Run()
	}
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Close()
	target = kurrentdb.Config{URL: srv.URL()}
	return m.Run()
}

// uniquePrefix keeps a test's streams apart from every other test's (and
// run's) on the shared server.
func uniquePrefix() string {
	return fmt.Sprintf("engramtest_%d_%d_%d.", os.Getpid(), time.Now().UnixNano()%1e9, prefixSeq.Add(1))
}

func open(t testing.TB, cfg kurrentdb.Config) *kurrentdb.EventStore {
	t.Helper()
	if cfg.StreamPrefix == "" {
		cfg.StreamPrefix = uniquePrefix()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := kurrentdb.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEventStoreConformance(t *testing.T) {
	eventstoretest.Run(t, func(t *testing.T) domain.EventStore { return open(t, target) })
}

// TestAppendStreamsAcrossStreams: on KurrentDB 25.1 and later (the test
// server plays 25.1 unless told otherwise) a multi-stream append is one
// v2 append session, every part or none (the port's conformance suite).
func TestAppendStreamsAcrossStreams(t *testing.T) {
	eventstoretest.RunAtomicAcrossStreams(t, func(t *testing.T) domain.EventStore { return open(t, target) })
}

// TestAppendStreamsOnOlderServer is what KurrentDB before 25.1, which has
// no multi-stream append, guarantees of AppendStreams: the parts one by
// one, each whole; a later part refused leaves the parts before it, and
// the error says how many landed. Its atomic multi-stream appends are
// never tried there.
func TestAppendStreamsOnOlderServer(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{Version: kurrentdbtest.Version24_10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx := context.Background()
	s := open(t, kurrentdb.Config{URL: srv.URL()})
	if _, err := s.Append(ctx, "p-2", domain.ExpectNoStream, []domain.NewEvent{event(0)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.AppendStreams(ctx, []domain.StreamAppend{
		{Stream: "p-1", Expected: domain.ExpectNoStream, Events: []domain.NewEvent{event(1), event(2)}},
		{Stream: "p-2", Expected: domain.ExpectNoStream, Events: []domain.NewEvent{event(3)}},
	})
	var partial *domain.PartialAppendError
	if !errors.As(err, &partial) || partial.Landed != 1 || !errors.Is(err, domain.ErrWrongExpectedVersion) {
		t.Fatalf("err = %v, want a PartialAppendError with 1 part landed, wrapping the wrong expected version", err)
	}
	if events, err := s.ReadStream(ctx, "p-1", 0); err != nil || len(events) != 2 {
		t.Fatalf("the first part: %d events, %v; want both stored", len(events), err)
	}
	res, err := s.AppendStreams(ctx, []domain.StreamAppend{
		{Stream: "p-3", Expected: domain.ExpectNoStream, Events: []domain.NewEvent{event(4)}},
		{Stream: "p-4", Expected: domain.ExpectNoStream, Events: []domain.NewEvent{event(5)}},
	})
	if err != nil || len(res) != 2 || res[0].LastPosition >= res[1].LastPosition {
		t.Fatalf("AppendStreams = %+v, %v; want both parts, in order", res, err)
	}
	if n := srv.Sessions(); n != 0 {
		t.Fatalf("%d v2 append sessions on a 24.10 server, want none", n)
	}
}

// TestAppendStreamsIsOneSession: on 25.1 AppendStreams is one v2 append
// session, whose events (their metadata carried as string properties)
// read back exactly as those of a v1 append; claims go in the same
// session, so a refused session leaves no attempt behind either.
func TestAppendStreamsIsOneSession(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx := context.Background()
	s := open(t, kurrentdb.Config{URL: srv.URL()})
	full := domain.NewEvent{ID: "0193a1f0-0000-7000-8000-0000000000a1", Type: "MemoryCreated", SchemaVersion: 3,
		Time: time.Date(2026, 5, 4, 3, 2, 1, 123456789, time.UTC), Actor: domain.Actor{Kind: domain.ActorUser, ID: "k-1", UserID: "u-1"},
		RequestID: "req-1", Source: domain.SourceImport, Payload: []byte(`{"memory_id":"m-1","n":1}`), Claims: []string{"memory/m-1"}}
	single := full
	single.ID, single.Claims = "0193a1f0-0000-7000-8000-0000000000a2", nil
	if _, err := s.Append(ctx, "q-0", domain.ExpectNoStream, []domain.NewEvent{single}); err != nil {
		t.Fatal(err)
	}
	res, err := s.AppendStreams(ctx, []domain.StreamAppend{
		{Stream: "q-1", Expected: domain.ExpectAny, Events: []domain.NewEvent{full}},
		{Stream: "q-2", Expected: domain.ExpectNoStream, Events: []domain.NewEvent{event(2)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Sessions(); n != 1 {
		t.Fatalf("%d v2 append sessions, want 1", n)
	}
	v1, _ := s.ReadStream(ctx, "q-0", 0)
	v2, _ := s.ReadStream(ctx, "q-1", 0)
	if len(v1) != 1 || len(v2) != 1 {
		t.Fatalf("q-0 holds %d, q-1 %d events; want 1 each", len(v1), len(v2))
	}
	got, want := v2[0], v1[0]
	want.ID, want.Stream, want.Position = full.ID, "q-1", res[0].LastPosition
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("through a session:\n%+v\nwant it as a v1 append stores it:\n%+v", got, want)
	}
	// The key m-1 was claimed in the session.
	again := full
	again.ID = "0193a1f0-0000-7000-8000-0000000000a3"
	_, err = s.AppendStreams(ctx, []domain.StreamAppend{
		{Stream: "q-3", Expected: domain.ExpectNoStream, Events: []domain.NewEvent{event(3)}},
		{Stream: "q-4", Expected: domain.ExpectNoStream, Events: []domain.NewEvent{again}},
	})
	if !errors.Is(err, domain.ErrClaimTaken) {
		t.Fatalf("claiming m-1 again: err = %v, want ErrClaimTaken", err)
	}
	if n := srv.Sessions(); n != 1 {
		t.Fatalf("%d v2 append sessions after a refused one, want still 1", n)
	}
}

// TestAppendStreamsSizeLimit: on 25.1 a multi-stream append is one
// write, so its parts together must fit the limit, the adapter's or
// (smaller) the server's; over it, nothing is stored. On 24.10 each part
// is its own write and must fit alone.
func TestAppendStreamsSizeLimit(t *testing.T) {
	part := func(stream string) domain.StreamAppend {
		e := event(0)
		e.Payload = []byte(`{"s":"` + strings.Repeat("x", 30_000) + `"}`)
		return domain.StreamAppend{Stream: stream, Expected: domain.ExpectNoStream, Events: []domain.NewEvent{e}}
	}
	for _, c := range []struct {
		name                      string
		version                   string
		serverLimit, adapterLimit int
		want                      string // the limit the error names; "" = both parts stored
	}{
		{"the adapter's limit", kurrentdbtest.Version25_1, -1, 50_000, "50000"},
		{"the server's limit, lower than the adapter's", kurrentdbtest.Version25_1, 50_000, 1 << 20, "50000"},
		{"24.10, part by part, each within the limit", kurrentdbtest.Version24_10, 50_000, 50_000, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := kurrentdbtest.Start(kurrentdbtest.Options{MaxAppendSize: c.serverLimit, Version: c.version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			ctx := context.Background()
			s := open(t, kurrentdb.Config{URL: srv.URL(), MaxAppendSize: c.adapterLimit})
			_, err = s.AppendStreams(ctx, []domain.StreamAppend{part("t-1"), part("t-2")})
			if c.want == "" {
				got, _ := s.ReadStream(ctx, "t-2", 0)
				if err != nil || len(got) != 1 {
					t.Fatalf("AppendStreams = %v, t-2 holds %d events; want both parts stored", err, len(got))
				}
				return
			}
			var derr *domain.Error
			if !errors.As(err, &derr) || derr.PublicCode() != "event_batch_too_large" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want event_batch_too_large naming the limit %s", err, c.want)
			}
			for _, stream := range []string{"t-1", "t-2"} {
				if got, _ := s.ReadStream(ctx, stream, 0); len(got) != 0 {
					t.Fatalf("%s holds %d events after a refused append, want none", stream, len(got))
				}
			}
		})
	}
}

// TestAppendStreamsConcurrentClaimsOneWinner: nodes making multi-stream
// appends that claim one key at once, round after round: exactly one
// wins each round (a session that lost the race on the claim stream
// starts again and then finds the key taken), and the log holds the
// winner's events alone.
func TestAppendStreamsConcurrentClaimsOneWinner(t *testing.T) {
	const rounds, nodes = 3, 4
	ctx := context.Background()
	cfg := target
	cfg.StreamPrefix = uniquePrefix()
	stores := make([]*kurrentdb.EventStore, nodes)
	for i := range stores {
		stores[i] = open(t, cfg)
	}
	for round := range rounds {
		key := fmt.Sprintf("memory/%d", round)
		errs := make([]error, nodes)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				claimed := event(i)
				claimed.Claims = []string{key}
				_, errs[i] = s.AppendStreams(ctx, []domain.StreamAppend{
					{Stream: fmt.Sprintf("u-%d.%d", round, i), Expected: domain.ExpectNoStream, Events: []domain.NewEvent{event(i)}},
					{Stream: fmt.Sprintf("v-%d.%d", round, i), Expected: domain.ExpectAny, Events: []domain.NewEvent{claimed}},
				})
			}()
		}
		wg.Wait()
		winners := 0
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
			case !errors.Is(err, domain.ErrClaimTaken):
				t.Fatalf("round %d, node %d: err = %v, want success or ErrClaimTaken", round, i, err)
			}
			stored := 0
			for _, stream := range []string{fmt.Sprintf("u-%d.%d", round, i), fmt.Sprintf("v-%d.%d", round, i)} {
				got, _ := stores[0].ReadStream(ctx, stream, 0)
				stored += len(got)
			}
			if want := map[bool]int{true: 2, false: 0}[err == nil]; stored != want {
				t.Fatalf("round %d, node %d (err %v): %d events stored, want %d", round, i, err, stored, want)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, winners)
		}
	}
}

func event(n int) domain.NewEvent {
	return domain.NewEvent{Type: "TestHappened", SchemaVersion: 1, Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}, Payload: []byte(fmt.Sprintf(`{"n":%d}`, n))}
}

// plainClient is the plain KurrentDB client on cfg's server, as another
// application sharing the KurrentDB would use it.
func plainClient(t *testing.T, cfg kurrentdb.Config) *kdb.Client {
	t.Helper()
	conf, err := kdb.ParseConnectionString(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	conf.Username, conf.Password, conf.Logger = cfg.Username, cfg.Password, kdb.NoopLogging()
	c, err := kdb.NewClient(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawAll reads $all with the plain client, as another KurrentDB user would.
func rawAll(t *testing.T) []*kdb.ResolvedEvent {
	t.Helper()
	c := plainClient(t, target)
	rs, err := c.ReadAll(context.Background(), kdb.ReadAllOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []*kdb.ResolvedEvent
	for {
		e, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

// TestPositionIsCommitPosition checks the documented mapping: an Engram
// event's position is its KurrentDB commit (= prepare) position, the stream
// is namespaced by the prefix, payload bytes are kept exactly, and an
// append's LastPosition is its last event's position.
func TestPositionIsCommitPosition(t *testing.T) {
	prefix := uniquePrefix()
	cfg := target
	cfg.StreamPrefix = prefix
	s := open(t, cfg)
	ctx := context.Background()
	payload := []byte(`{"z": 1,  "a":[2, 1], "é":"x"}`)
	e := event(0)
	e.Payload = payload
	res, err := s.Append(ctx, "mem-1", domain.ExpectNoStream, []domain.NewEvent{event(1), event(2), e})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "mem-1", 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("read: %d events, %v", len(got), err)
	}
	if res.LastPosition != got[2].Position {
		t.Fatalf("LastPosition = %d, last event at %d", res.LastPosition, got[2].Position)
	}
	if string(got[2].Payload) != string(payload) {
		t.Fatalf("payload = %s, want %s", got[2].Payload, payload)
	}
	byID := map[string]*kdb.RecordedEvent{}
	for _, r := range rawAll(t) {
		byID[r.Event.EventID.String()] = r.Event
	}
	for _, g := range got {
		r := byID[g.ID]
		if r == nil {
			t.Fatalf("event %s not in $all", g.ID)
		}
		if r.StreamID != prefix+"mem-1" || r.Position.Commit != g.Position || r.Position.Prepare != g.Position || r.EventNumber != g.Version || r.ContentType != "application/json" {
			t.Fatalf("event %s: KurrentDB has stream %q commit %d prepare %d revision %d content type %q; Engram has position %d version %d",
				g.ID, r.StreamID, r.Position.Commit, r.Position.Prepare, r.EventNumber, r.ContentType, g.Position, g.Version)
		}
	}
}

// TestForeignStreamsInvisible checks that $all reads, Head and the
// subscription keep to the store's own prefix: other deployments' events
// (and KurrentDB's system events) are never delivered.
func TestForeignStreamsInvisible(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mine, other := open(t, target), open(t, target)
	if _, err := other.Append(ctx, "x-1", domain.ExpectAny, []domain.NewEvent{event(100)}); err != nil {
		t.Fatal(err)
	}
	res, err := mine.Append(ctx, "m-1", domain.ExpectAny, []domain.NewEvent{event(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(ctx, "x-1", domain.ExpectAny, []domain.NewEvent{event(101)}); err != nil {
		t.Fatal(err)
	}
	all, err := mine.ReadAll(ctx, 0, 100)
	if err != nil || len(all) != 1 || all[0].Stream != "m-1" {
		t.Fatalf("ReadAll: %+v, %v; want only m-1's event", all, err)
	}
	head, err := mine.Head(ctx)
	if err != nil || head != res.LastPosition {
		t.Fatalf("Head = %d, %v; want %d (the foreign event after it must not count)", head, err, res.LastPosition)
	}
	got := make(chan domain.Event, 10)
	go mine.SubscribeAll(ctx, 0, func(_ context.Context, events []domain.Event) error {
		for _, e := range events {
			got <- e
		}
		return nil
	})
	if _, err := other.Append(ctx, "x-1", domain.ExpectAny, []domain.NewEvent{event(102)}); err != nil {
		t.Fatal(err)
	}
	res2, err := mine.Append(ctx, "m-1", domain.ExpectAny, []domain.NewEvent{event(2)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint64{res.LastPosition, res2.LastPosition} {
		select {
		case e := <-got:
			if e.Position != want || e.Stream != "m-1" {
				t.Fatalf("subscription delivered %s@%d, want m-1@%d", e.Stream, e.Position, want)
			}
		case <-ctx.Done():
			t.Fatal("subscription stalled")
		}
	}
}

// TestSubscriptionSurvivesDrop ends the subscription server-side (as a
// KurrentDB restart or leader change does) twice; the adapter must
// resubscribe from where it was and deliver every event exactly once.
func TestSubscriptionSurvivesDrop(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := open(t, kurrentdb.Config{URL: srv.URL(), RetryDelay: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan uint64, 100)
	go s.SubscribeAll(ctx, 0, func(_ context.Context, events []domain.Event) error {
		for _, e := range events {
			got <- e.Position
		}
		return nil
	})
	var want []uint64
	for i := range 9 {
		res, err := s.Append(ctx, "d-1", domain.ExpectAny, []domain.NewEvent{event(i)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res.LastPosition)
		if i%3 == 2 {
			// Wait for delivery up to here, then cut the subscription.
			for len(got) < len(want) && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			srv.DropSubscriptions()
		}
	}
	for i, w := range want {
		select {
		case p := <-got:
			if p != w {
				t.Fatalf("event %d delivered at %d, want %d", i, p, w)
			}
		case <-ctx.Done():
			t.Fatalf("subscription stalled after a drop, before event %d", i)
		}
	}
	select {
	case p := <-got:
		t.Fatalf("event at %d delivered twice", p)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestInvalidEventIDWritesNothing(t *testing.T) {
	s := open(t, target)
	ctx := context.Background()
	bad := event(1)
	bad.ID = "not-a-uuid"
	_, err := s.Append(ctx, "i-1", domain.ExpectAny, []domain.NewEvent{event(0), bad})
	if err == nil || !strings.Contains(err.Error(), "UUID") {
		t.Fatalf("err = %v, want a clear UUID error", err)
	}
	if got, _ := s.ReadStream(ctx, "i-1", 0); len(got) != 0 {
		t.Fatalf("%d events written", len(got))
	}
}

func TestConfigErrors(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	cases := []struct {
		name    string
		cfg     kurrentdb.Config
		wantErr string
	}{
		{"credentials in the URL", kurrentdb.Config{URL: "kurrentdb://admin:s3cret@127.0.0.1:2113?tls=false"}, "ENGRAM_KURRENTDB_USERNAME"},
		{"credentials without TLS", kurrentdb.Config{URL: "kurrentdb://127.0.0.1:2113?tls=false", Username: "admin", Password: "s3cret"}, "need TLS"},
		{"username without password", kurrentdb.Config{URL: "kurrentdb://127.0.0.1:2113", Username: "admin"}, "both"},
		{"not a connection string", kurrentdb.Config{URL: "http://127.0.0.1:2113"}, "scheme"},
		{"empty URL", kurrentdb.Config{}, "connection string"},
		{"prefix without a final dot", kurrentdb.Config{URL: "kurrentdb://127.0.0.1:2113?tls=false", StreamPrefix: "engram"}, "stream prefix"},
		{"prefix with a dash", kurrentdb.Config{URL: "kurrentdb://127.0.0.1:2113?tls=false", StreamPrefix: "engram-a."}, "stream prefix"},
		{"unknown setting", kurrentdb.Config{URL: "kurrentdb://127.0.0.1:2113?tls=maybe"}, "tls"},
		{"nobody listening", kurrentdb.Config{URL: "kurrentdb://" + deadAddr + "?tls=false&maxDiscoverAttempts=2", Logger: slog.New(slog.DiscardHandler)}, "connect to"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := kurrentdb.Open(ctx, c.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, c.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
}

// TestCredentials runs the test server over TLS with basic-auth users: the
// right credentials work, wrong ones fail at Open with a clear error.
func TestCredentials(t *testing.T) {
	tlsConf, err := kurrentdbtest.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{Username: "engram", Password: "right", TLS: tlsConf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := open(t, kurrentdb.Config{URL: srv.URL(), Username: "engram", Password: "right"})
	if _, err := s.Append(context.Background(), "c-1", domain.ExpectNoStream, []domain.NewEvent{event(0)}); err != nil {
		t.Fatal(err)
	}
	_, err = kurrentdb.Open(context.Background(), kurrentdb.Config{URL: srv.URL(), Username: "engram", Password: "wrong", Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "Unauthenticated") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Open with a wrong password: %v, want an Unauthenticated error that does not echo the password", err)
	}
}

// TestLeastPrivilegeUser: a user outside $admins may not read $all under
// KurrentDB's default ACL; Open says which permission is missing.
func TestLeastPrivilegeUser(t *testing.T) {
	tlsConf, err := kurrentdbtest.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{Username: "admin", Password: "changeit", Users: map[string]string{"engram": "s3cret"}, TLS: tlsConf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = kurrentdb.Open(ctx, kurrentdb.Config{URL: srv.URL(), Username: "engram", Password: "s3cret", Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("Open as a user outside $admins succeeded")
	}
	for _, want := range []string{`"engram"`, "may not read $all", "$admins"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("Open error = %v; want it to mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error leaks the password: %v", err)
	}
	open(t, kurrentdb.Config{URL: srv.URL(), Username: "admin", Password: "changeit"})
}

// TestSyncLog covers what sync needs besides the port: a stream's version
// and which stream holds an event id.
func TestSyncLog(t *testing.T) {
	s, other := open(t, target), open(t, target)
	ctx := context.Background()
	if v, err := s.StreamVersion(ctx, "a-1"); err != nil || v != -1 {
		t.Fatalf("version of a missing stream = %d, %v; want -1", v, err)
	}
	events := []domain.NewEvent{event(0), event(1), event(2)}
	events[0].ID, events[2].ID = "0193a1f0-0000-7000-8000-00000000000a", "0193a1f0-0000-7000-8000-00000000000c"
	if _, err := s.Append(ctx, "a-1", domain.ExpectNoStream, events); err != nil {
		t.Fatal(err)
	}
	foreign := event(3)
	foreign.ID = "0193a1f0-0000-7000-8000-00000000000f"
	if _, err := other.Append(ctx, "a-2", domain.ExpectNoStream, []domain.NewEvent{foreign}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.StreamVersion(ctx, "a-1"); err != nil || v != 2 {
		t.Fatalf("version = %d, %v; want 2", v, err)
	}
	got, err := s.EventStreams(ctx, []string{events[0].ID, events[2].ID, foreign.ID, "0193a1f0-0000-7000-8000-0000000000ff"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{events[0].ID: "a-1", events[2].ID: "a-1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("EventStreams = %v, want %v (another prefix's event is not this log's)", got, want)
	}
}

// TestEventPlacesReadsOnlyTheTail: the first lookup of event ids reads
// the log once; a later one reads only what was appended since, by this
// node or another, and finds it.
func TestEventPlacesReadsOnlyTheTail(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{MaxAppendSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx := context.Background()
	cfg := kurrentdb.Config{URL: srv.URL(), StreamPrefix: uniquePrefix(), MaxAppendSize: math.MaxInt32}
	s, otherNode := open(t, cfg), open(t, cfg)
	// Two pages of $all (the store reads 512 records a page).
	many := make([]domain.NewEvent, 600)
	for i := range many {
		many[i] = event(i)
	}
	many[7].ID = "0193a1f0-0000-7000-8000-0000000000b7"
	res, err := s.Append(ctx, "r-1", domain.ExpectNoStream, many)
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.EventPlaces(ctx, []string{many[7].ID})
	if err != nil || first[many[7].ID].Stream != "r-1" {
		t.Fatalf("EventPlaces = %v, %v; want %s in r-1", first, err, many[7].ID)
	}
	late := event(600)
	late.ID = "0193a1f0-0000-7000-8000-0000000000b8"
	res2, err := otherNode.Append(ctx, "r-2", domain.ExpectNoStream, []domain.NewEvent{late})
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Reads()
	got, err := s.EventPlaces(ctx, []string{many[7].ID, late.ID, "0193a1f0-0000-7000-8000-0000000000ff", "not-a-uuid"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]domain.EventPlace{many[7].ID: first[many[7].ID], late.ID: {Stream: "r-2", Position: res2.LastPosition}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("EventPlaces = %v, want %v", got, want)
	}
	if first[many[7].ID].Position >= res.LastPosition {
		t.Fatalf("the 8th event at %d, the append's last at %d", first[many[7].ID].Position, res.LastPosition)
	}
	if n := srv.Reads() - before; n != 1 {
		t.Fatalf("the second lookup made %d reads, want 1 (the events since the first)", n)
	}
}

// TestSubscribeDeliversLongCatchUpExactlyOnce catches up over more events
// than one handler batch holds: every event arrives once, in order, in
// batches of at most eventlog.FollowBatch. The first call is slow, so that
// the events pile up and later batches are full.
func TestSubscribeDeliversLongCatchUpExactlyOnce(t *testing.T) {
	const total = 2*eventlog.FollowBatch + 137
	s := open(t, target)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var want []uint64
	for i := 0; i < total; i += 100 {
		events := make([]domain.NewEvent, min(100, total-i))
		for j := range events {
			events[j] = event(i + j)
		}
		if _, err := s.Append(ctx, fmt.Sprintf("l-%d", i%7), domain.ExpectAny, events); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ReadAll(ctx, 0, total+1)
	if err != nil || len(all) != total {
		t.Fatalf("ReadAll: %d events, %v", len(all), err)
	}
	for _, e := range all {
		want = append(want, e.Position)
	}
	var got []uint64
	subCtx, stop := context.WithCancel(ctx)
	err = s.SubscribeAll(subCtx, 0, func(_ context.Context, events []domain.Event) error {
		if len(events) > eventlog.FollowBatch {
			t.Errorf("batch of %d events", len(events))
		}
		if len(got) == 0 {
			time.Sleep(300 * time.Millisecond)
		}
		for _, e := range events {
			got = append(got, e.Position)
		}
		if len(got) >= total {
			stop()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || ctx.Err() != nil {
		t.Fatalf("SubscribeAll = %v after %d of %d events", err, len(got), total)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered %d positions, not the log's %d in order", len(got), len(want))
	}
}

// TestSurvivesServerRestart keeps the server down for longer than the
// client's rediscovery lasts (after which the client closes itself for
// good, and a call racing with that blocks forever inside it): once the
// server is back, writes work again and the subscription resumes where it
// was.
func TestSurvivesServerRestart(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	quiet := slog.New(slog.DiscardHandler)
	s := open(t, kurrentdb.Config{URL: srv.URL() + "&maxDiscoverAttempts=2&discoveryInterval=10&gossipTimeout=1", RetryDelay: 10 * time.Millisecond, Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	got := make(chan string, 10)
	go s.SubscribeAll(ctx, 0, func(_ context.Context, events []domain.Event) error {
		for _, e := range events {
			got <- e.Stream
		}
		return nil
	})
	if _, err := s.Append(ctx, "before", domain.ExpectAny, []domain.NewEvent{event(0)}); err != nil {
		t.Fatal(err)
	}
	if st := <-got; st != "before" {
		t.Fatalf("delivered %s", st)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- srv.Restart(2 * time.Second) }()
	time.Sleep(100 * time.Millisecond)
	// This append (racing with the subscription's resubscribes) runs or
	// waits for the failing rediscovery that closes the client.
	if _, err := s.Append(ctx, "down", domain.ExpectAny, []domain.NewEvent{event(1)}); err == nil {
		t.Fatal("append succeeded with the server down")
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	var appendErr error
	for range 3 { // the first may still meet the closed client, which it replaces
		if _, appendErr = s.Append(ctx, "after", domain.ExpectAny, []domain.NewEvent{event(2)}); appendErr == nil {
			break
		}
	}
	if appendErr != nil {
		t.Fatalf("append after the restart: %v", appendErr)
	}
	select {
	case st := <-got:
		if st != "after" {
			t.Fatalf("delivered %s, want after", st)
		}
	case <-ctx.Done():
		t.Fatal("the subscription did not come back after the restart")
	}
}

// TestPrefixBoundaries runs two deployments whose prefixes nest ("p." and
// "p.staging."), as a production and a staging Engram sharing a KurrentDB
// would: neither may read, count or be delivered the other's events.
func TestPrefixBoundaries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prod := uniquePrefix()
	mine := open(t, kurrentdb.Config{URL: target.URL, Username: target.Username, Password: target.Password, StreamPrefix: prod})
	staging := open(t, kurrentdb.Config{URL: target.URL, Username: target.Username, Password: target.Password, StreamPrefix: prod + "staging."})
	res, err := mine.Append(ctx, "agent-u-a.b", domain.ExpectAny, []domain.NewEvent{event(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"agent-u-a.b", "down"} {
		if _, err := staging.Append(ctx, stream, domain.ExpectAny, []domain.NewEvent{event(2)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		store *kurrentdb.EventStore
		want  []string
	}{
		{"production", mine, []string{"agent-u-a.b"}},
		{"staging", staging, []string{"agent-u-a.b", "down"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			all, err := c.store.ReadAll(ctx, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range all {
				got = append(got, e.Stream)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("ReadAll streams = %v, want %v", got, c.want)
			}
		})
	}
	head, err := mine.Head(ctx)
	if err != nil || head != res.LastPosition {
		t.Fatalf("production Head = %d, %v; want %d (staging's later events are not its own)", head, err, res.LastPosition)
	}
	got := make(chan domain.Event, 10)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go mine.SubscribeAll(sctx, 0, func(_ context.Context, events []domain.Event) error {
		for _, e := range events {
			got <- e
		}
		return nil
	})
	if _, err := staging.Append(ctx, "agent-u-a.b", domain.ExpectAny, []domain.NewEvent{event(3)}); err != nil {
		t.Fatal(err)
	}
	res2, err := mine.Append(ctx, "agent-u-a.b", domain.ExpectAny, []domain.NewEvent{event(4)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint64{res.LastPosition, res2.LastPosition} {
		select {
		case e := <-got:
			if e.Position != want {
				t.Fatalf("production subscription delivered %s@%d, want @%d", e.Stream, e.Position, want)
			}
		case <-ctx.Done():
			t.Fatal("subscription stalled")
		}
	}
	if _, err := mine.Append(ctx, "staging.agent-x", domain.ExpectAny, []domain.NewEvent{event(5)}); err == nil {
		t.Fatal("Append to a stream that reads as another prefix's succeeded")
	}
}

// TestRecordsThatAreNotEngramEvents puts into Engram streams what KurrentDB
// or another application can: a tombstone ("$streamDeleted", written into
// the deleted stream) and an event without Engram's metadata. Reads, Head
// and the subscription skip them and go on.
func TestRecordsThatAreNotEngramEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prefix := uniquePrefix()
	cfg := target
	cfg.StreamPrefix = prefix
	s := open(t, cfg)
	plain := plainClient(t, target)
	first, err := s.Append(ctx, "agent-1", domain.ExpectAny, []domain.NewEvent{event(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "job-gone", domain.ExpectAny, []domain.NewEvent{event(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.TombstoneStream(ctx, prefix+"job-gone", kdb.TombstoneStreamOptions{StreamState: kdb.Any{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.AppendToStream(ctx, prefix+"agent-1", kdb.AppendToStreamOptions{StreamState: kdb.Any{}},
		kdb.EventData{EventID: uuid.New(), EventType: "SomethingElse", ContentType: kdb.ContentTypeJson, Data: []byte(`{}`), Metadata: []byte(`{"by":"another app"}`)}); err != nil {
		t.Fatal(err)
	}
	all, err := s.ReadAll(ctx, 0, 100)
	if err != nil || len(all) != 2 || all[0].Position != first.LastPosition {
		t.Fatalf("ReadAll = %+v, %v; want the two Engram events only", all, err)
	}
	head, err := s.Head(ctx)
	if err != nil || head != all[1].Position {
		t.Fatalf("Head = %d, %v; want %d, the newest Engram event", head, err, all[1].Position)
	}
	stream, err := s.ReadStream(ctx, "agent-1", 0)
	if err != nil || len(stream) != 1 {
		t.Fatalf("ReadStream = %+v, %v; want the one Engram event", stream, err)
	}
	got := make(chan domain.Event, 10)
	errs := make(chan error, 1)
	go func() {
		errs <- s.SubscribeAll(ctx, 0, func(_ context.Context, events []domain.Event) error {
			for _, e := range events {
				got <- e
			}
			return nil
		})
	}()
	last, err := s.Append(ctx, "agent-1", domain.ExpectAny, []domain.NewEvent{event(3)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []uint64{all[0].Position, all[1].Position, last.LastPosition} {
		select {
		case e := <-got:
			if e.Position != want {
				t.Fatalf("subscription delivered @%d, want @%d", e.Position, want)
			}
		case err := <-errs:
			t.Fatalf("subscription ended: %v", err)
		case <-ctx.Done():
			t.Fatal("subscription stalled")
		}
	}
}

// TestAppendSizeLimit: KurrentDB 24.10 and 25.0 refuse an append over
// MaxAppendSize (1 MiB); an Engram batch is atomic, so one over the limit
// is refused whole, before anything is written, with a payload_too_large
// error naming the limit — whether the adapter sees it coming (its own
// limit) or the server says so (a server configured lower).
func TestAppendSizeLimit(t *testing.T) {
	// events of n payload bytes each; Engram's metadata adds ~150 more.
	batch := func(events, bytes int) []domain.NewEvent {
		out := make([]domain.NewEvent, events)
		for i := range out {
			out[i] = event(i)
			out[i].Payload = []byte(`{"s":"` + strings.Repeat("x", bytes) + `"}`)
		}
		return out
	}
	cases := []struct {
		name          string
		serverLimit   int // kurrentdbtest.Options.MaxAppendSize
		adapterLimit  int // kurrentdb.Config.MaxAppendSize
		events        []domain.NewEvent
		wantLimitText string // "" = the append succeeds
	}{
		{"under 1 MiB on a 24.10 server", 0, 0, batch(10, 100_000), ""},
		{"over 1 MiB on a 24.10 server", 0, 0, batch(12, 100_000), "1048576"},
		{"one event over 1 MiB", 0, 0, batch(1, 1<<20), "1048576"},
		{"server configured lower than the adapter", 64 << 10, 0, batch(2, 40_000), "65536"},
		{"a 25.1 server and a raised adapter limit", -1, 8 << 20, batch(30, 100_000), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, err := kurrentdbtest.Start(kurrentdbtest.Options{MaxAppendSize: c.serverLimit})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			s := open(t, kurrentdb.Config{URL: srv.URL(), MaxAppendSize: c.adapterLimit})
			ctx := context.Background()
			_, err = s.Append(ctx, "agent-big", domain.ExpectAny, c.events)
			got, rerr := s.ReadStream(ctx, "agent-big", 0)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if c.wantLimitText == "" {
				if err != nil || len(got) != len(c.events) {
					t.Fatalf("Append = %v, stream holds %d events; want all %d stored", err, len(got), len(c.events))
				}
				return
			}
			var derr *domain.Error
			if !errors.As(err, &derr) || derr.Kind != domain.KindTooLarge || derr.PublicCode() != "event_batch_too_large" || !strings.Contains(err.Error(), c.wantLimitText) {
				t.Fatalf("Append error = %v; want payload_too_large event_batch_too_large naming the limit %s", err, c.wantLimitText)
			}
			if len(got) != 0 {
				t.Fatalf("the stream holds %d events after a refused append; want none", len(got))
			}
		})
	}
}

// TestReadAllSkipsForeignEventsServerSide: on a KurrentDB shared with
// another application, ReadAll does not page through the foreign events in
// the client: a few requests, whatever their number, and the same events
// in the same order as on a KurrentDB of its own.
func TestReadAllSkipsForeignEventsServerSide(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := open(t, kurrentdb.Config{URL: srv.URL()})
	ctx := context.Background()
	var want []uint64
	for round := 0; round < 3; round++ {
		srv.Fill("orders-1", 20_000, []byte(`{"order":1}`))
		for i := 0; i < 5; i++ {
			res, err := s.Append(ctx, "agent-1", domain.ExpectAny, []domain.NewEvent{event(round*10 + i)})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, res.LastPosition)
		}
	}
	srv.Fill("orders-1", 20_000, []byte(`{"order":1}`))
	var got []uint64
	var after uint64
	before := srv.Reads()
	for {
		page, err := s.ReadAll(ctx, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			got = append(got, e.Position)
		}
		after = page[len(page)-1].Position
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("positions read = %v, want %v", got, want)
	}
	// 5 pages of at most 3 requests each (a plain page, the end of $all, the
	// filtered read); paging 80,000 foreign events in the client took 200.
	if reads := srv.Reads() - before; reads > 15 {
		t.Fatalf("%d read requests for 15 events among 80,000 foreign ones; want at most 15", reads)
	}
}

// TestHeadSkipsForeignEventsServerSide: Head on a KurrentDB where another
// application wrote many events after Engram's newest does not page back
// through them once the store knows a recent Engram position (its own
// writes or reads); it is right either way, also for another node's
// later events.
func TestHeadSkipsForeignEventsServerSide(t *testing.T) {
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	prefix := uniquePrefix()
	writer := open(t, kurrentdb.Config{URL: srv.URL(), StreamPrefix: prefix})
	other := open(t, kurrentdb.Config{URL: srv.URL(), StreamPrefix: prefix})
	ctx := context.Background()
	if _, err := writer.Append(ctx, "agent-1", domain.ExpectAny, []domain.NewEvent{event(1)}); err != nil {
		t.Fatal(err)
	}
	srv.Fill("orders-1", 20_000, []byte(`{"order":1}`))
	last, err := other.Append(ctx, "agent-2", domain.ExpectAny, []domain.NewEvent{event(2)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Fill("orders-1", 20_000, []byte(`{"order":1}`))
	before := srv.Reads()
	head, err := writer.Head(ctx)
	if err != nil || head != last.LastPosition {
		t.Fatalf("Head = %d, %v; want %d, the other node's event", head, err, last.LastPosition)
	}
	if reads := srv.Reads() - before; reads > 3 {
		t.Fatalf("Head made %d read requests past 20,000 foreign events; want at most 3", reads)
	}
	fresh := open(t, kurrentdb.Config{URL: srv.URL(), StreamPrefix: prefix})
	if head, err := fresh.Head(ctx); err != nil || head != last.LastPosition {
		t.Fatalf("Head of a store that has seen nothing = %d, %v; want %d", head, err, last.LastPosition)
	}
}
