package projections_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/internal/pgtest"
	"github.com/engram-memory/engram/projections"
)

// sharedProjection keeps, in PostgreSQL, which node applied each event:
// a store several nodes share. Its primary key refuses an event applied
// twice; its checkpoint row is locked while a batch applies, as the
// PostgreSQL stores do.
type sharedProjection struct {
	db   *postgres.DB
	node string
	// delay slows each batch down (nanoseconds), so a test can act while
	// a rebuild runs.
	delay atomic.Int64
	// refuseReset makes Reset fail.
	refuseReset atomic.Bool
}

func (p *sharedProjection) Name() string { return "shared" }

func (p *sharedProjection) Position(ctx context.Context) (uint64, error) {
	var pos int64
	err := p.db.Pool.QueryRow(ctx, `SELECT position FROM shared_checkpoint`).Scan(&pos)
	return uint64(pos), err
}

func (p *sharedProjection) Apply(ctx context.Context, events []domain.Event) error {
	return pgx.BeginFunc(ctx, p.db.Pool, func(tx pgx.Tx) error {
		var done int64
		if err := tx.QueryRow(ctx, `SELECT position FROM shared_checkpoint FOR UPDATE`).Scan(&done); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(p.delay.Load())):
		}
		for _, e := range events {
			if e.Position <= uint64(done) {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO shared_applied (position, node) VALUES ($1, $2)`, int64(e.Position), p.node); err != nil {
				return err
			}
			done = int64(e.Position)
		}
		if _, err := tx.Exec(ctx, `UPDATE shared_checkpoint SET position = $1`, done); err != nil {
			return err
		}
		return postgres.AnnounceChange(ctx, tx, p.Name())
	})
}

// Reset waits for a batch being applied (the checkpoint row's lock), as
// the PostgreSQL stores do, then empties the store.
func (p *sharedProjection) Reset(ctx context.Context) error {
	if p.refuseReset.Load() {
		return errors.New("reset refused")
	}
	return pgx.BeginFunc(ctx, p.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT position FROM shared_checkpoint FOR UPDATE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM shared_applied`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE shared_checkpoint SET position = 0`); err != nil {
			return err
		}
		return postgres.AnnounceChange(ctx, tx, p.Name())
	})
}

// node is one engine of the leased-projection tests, running until stop.
type node struct {
	name       string
	projection *sharedProjection
	engine     *projections.Engine
	stop       context.CancelFunc
	done       chan struct{}
}

func startNode(t testing.TB, db *postgres.DB, name string) *node {
	t.Helper()
	store := postgres.NewEventStore(db, 20*time.Millisecond)
	projection := &sharedProjection{db: db, node: name}
	engine := projections.NewEngine(store, slog.New(slog.DiscardHandler), projection)
	if err := engine.UseLeases(projections.Leasing{
		Leases: postgres.NewLeases(db, name, 100*time.Millisecond), Rebuilds: postgres.NewRebuilds(db), Changes: postgres.NewChanges(db),
		Node: name, Projections: []string{"shared"},
	}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	n := &node{name: name, projection: projection, engine: engine, stop: stop, done: make(chan struct{})}
	go func() { defer close(n.done); _ = engine.Run(ctx) }()
	t.Cleanup(func() { stop(); <-n.done })
	return n
}

func (n *node) lease() projections.LeaseStatus {
	if l := n.engine.Status()["shared"].Lease; l != nil {
		return *l
	}
	return projections.LeaseStatus{}
}

func eventually(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// leasedPair starts two nodes running the shared projection over a fresh
// PostgreSQL database and returns once one holds the lease and the other
// names it.
func leasedPair(t testing.TB) (db *postgres.DB, nodes []*node, holder, waiter *node) {
	t.Helper()
	ctx := context.Background()
	server, err := pgtest.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	db, err = postgres.Open(ctx, server.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE shared_applied (position BIGINT PRIMARY KEY, node TEXT NOT NULL);
		CREATE TABLE shared_checkpoint (position BIGINT NOT NULL); INSERT INTO shared_checkpoint VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	nodes = []*node{startNode(t, db, "node-a"), startNode(t, db, "node-b")}
	eventually(t, 5*time.Second, "one node holds the lease and the other names it", func() bool {
		for i, n := range nodes {
			if n.lease().HeldHere && nodes[1-i].lease().Holder == n.name {
				holder, waiter = n, nodes[1-i]
				return true
			}
		}
		return false
	})
	return db, nodes, holder, waiter
}

// BenchmarkWriteVisibleOnNodeWithoutLease: one append, then WaitFor its
// position on the holder (which applies it) and on the node without the
// lease (which reads the shared checkpoint).
func BenchmarkWriteVisibleOnNodeWithoutLease(b *testing.B) {
	db, _, holder, waiter := leasedPair(b)
	log := postgres.NewEventStore(db, 20*time.Millisecond)
	ctx := context.Background()
	for _, n := range []struct {
		name string
		node *node
	}{{"holder", holder}, {"without-lease", waiter}} {
		b.Run(n.name, func(b *testing.B) {
			for b.Loop() {
				res, err := log.Append(ctx, "s", domain.ExpectAny, []domain.NewEvent{{Type: "Added", SchemaVersion: 1, Payload: []byte(`{}`)}})
				if err != nil {
					b.Fatal(err)
				}
				if err := n.node.engine.WaitFor(ctx, res.LastPosition); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLeasedProjectionRunsOnOneNodeAndMovesWhenItsHolderDies: two nodes
// run a projection whose store they share. Only the lease holder applies
// events; the other answers WaitFor from the shared checkpoint. When the
// holder's session dies under load, the other takes over within seconds
// and resumes at the checkpoint: every event is applied exactly once.
func TestLeasedProjectionRunsOnOneNodeAndMovesWhenItsHolderDies(t *testing.T) {
	ctx := context.Background()
	db, nodes, holder, waiter := leasedPair(t)
	log := postgres.NewEventStore(db, 20*time.Millisecond)
	write := func(i int) uint64 {
		res, err := log.Append(ctx, fmt.Sprintf("s-%d", i%7), domain.ExpectAny, []domain.NewEvent{{Type: "Added", SchemaVersion: 1, Payload: []byte(`{}`)}})
		if err != nil {
			t.Error(err)
		}
		return res.LastPosition
	}
	var last uint64
	for i := range 20 {
		last = write(i)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := waiter.engine.WaitFor(wait, last); err != nil {
		t.Fatalf("WaitFor on the node without the lease: %v", err)
	}
	var others int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM shared_applied WHERE node <> $1`, holder.name).Scan(&others); err != nil || others != 0 {
		t.Fatalf("%d events applied by the node without the lease (%v), want none", others, err)
	}

	// Load while the holder's lease session is terminated, as PostgreSQL
	// does when a node is killed.
	var wg sync.WaitGroup
	stopLoad := make(chan struct{})
	var stopOnce sync.Once
	endLoad := func() { stopOnce.Do(func() { close(stopLoad) }); wg.Wait() }
	defer endLoad()
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 20; ; i++ {
			select {
			case <-stopLoad:
				return
			default:
			}
			pos := write(i)
			mu.Lock()
			last = max(last, pos)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'engram projection lease' AND pid IN (
		SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)`); err != nil {
		t.Fatal(err)
	}
	took := eventually(t, 5*time.Second, "the other node takes the lease over", func() bool { return waiter.lease().HeldHere })
	t.Logf("takeover %s after the holder's session ended", took.Round(time.Millisecond))
	// The old holder notices at its next check of the lease session.
	eventually(t, time.Second, "the node that lost its lease stops applying", func() bool {
		l := holder.lease()
		return !l.HeldHere && l.Holder != holder.name
	})
	time.Sleep(200 * time.Millisecond)
	endLoad()
	for _, n := range nodes {
		if err := n.engine.WaitFor(wait, last); err != nil {
			t.Fatalf("%s: WaitFor after the takeover: %v", n.name, err)
		}
	}
	var applied, distinct, byWaiter int
	head, err := log.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT position), count(*) FILTER (WHERE node = $1) FROM shared_applied`, waiter.name).Scan(&applied, &distinct, &byWaiter); err != nil {
		t.Fatal(err)
	}
	var events int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if applied != events || distinct != events || byWaiter == 0 {
		t.Fatalf("%d events applied (%d distinct, %d by the new holder) of %d in the log (head %d), want each once and the new holder applying", applied, distinct, byWaiter, events, head)
	}
}

// TestLeasedProjectionIsRebuiltLiveByItsHolder: a live rebuild asked of
// the node without the lease runs on the holder while both serve; both
// report the projection rebuilding meanwhile and leave it out of their
// visibility waits; the request returns the events replayed; a second
// request meanwhile is refused. Then the holder's session dies in the
// middle of a second rebuild: the other node takes the lease over, starts
// the rebuild again and completes it, and the store holds every event
// exactly once.
func TestLeasedProjectionIsRebuiltLiveByItsHolder(t *testing.T) {
	ctx := context.Background()
	db, nodes, holder, waiter := leasedPair(t)
	log := postgres.NewEventStore(db, 20*time.Millisecond)
	write := func() uint64 {
		var events []domain.NewEvent
		for range 100 {
			events = append(events, domain.NewEvent{Type: "Added", SchemaVersion: 1, Payload: []byte(`{}`)})
		}
		res, err := log.Append(ctx, "s", domain.ExpectAny, events)
		if err != nil {
			t.Fatal(err)
		}
		return res.LastPosition
	}
	var head uint64
	for range 20 {
		head = write()
	}
	for _, n := range nodes {
		n.projection.delay.Store(int64(150 * time.Millisecond)) // 4 chunks of 512: ~0.6 s
	}
	rebuild := func(n *node) chan error {
		done := make(chan error, 1)
		go func() {
			events, err := n.engine.RebuildLive(ctx, "shared")
			if err == nil && events < head {
				err = fmt.Errorf("replayed up to %d, want at least the head %d", events, head)
			}
			done <- err
		}()
		return done
	}
	rebuilding := func(n *node) bool { return n.engine.Status()["shared"].Rebuilding }
	done := rebuild(waiter)
	eventually(t, 5*time.Second, "both nodes report the projection rebuilding", func() bool { return rebuilding(holder) && rebuilding(waiter) })
	if _, err := holder.engine.RebuildLive(ctx, "shared"); !errors.Is(err, projections.ErrRebuilding) {
		t.Fatalf("a second request while one runs: %v, want ErrRebuilding", err)
	}
	// A write meanwhile is visible at once on both nodes: their waits
	// leave the projection being rebuilt out.
	during := write()
	for _, n := range nodes {
		wait, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		if err := n.engine.WaitFor(wait, during); err != nil {
			t.Fatalf("%s: a write during the rebuild waited for it: %v", n.name, err)
		}
		cancel()
	}
	if err := <-done; err != nil {
		t.Fatalf("live rebuild asked of the node without the lease: %v", err)
	}
	// The lease may move under a loaded machine (a lease check missing its
	// 100 ms): the rows are the holder's that ran the rebuild.
	var byOther int
	var ranOn string
	if err := db.Pool.QueryRow(ctx, `SELECT node, (SELECT count(*) FROM shared_applied AS a WHERE a.node <> r.node) FROM projection_rebuilds AS r`).Scan(&ranOn, &byOther); err != nil || byOther != 0 || ranOn != holder.name && ranOn != waiter.name {
		t.Fatalf("rebuild ran on %q; %d events applied by another node (%v), want none", ranOn, byOther, err)
	}
	if ranOn != holder.name {
		t.Logf("the lease moved to %s before the rebuild", ranOn)
		holder, waiter = waiter, holder
	}
	eventually(t, 2*time.Second, "neither node reports it rebuilding", func() bool { return !rebuilding(holder) && !rebuilding(waiter) })

	// The holder dies part-way through the next rebuild.
	done = rebuild(waiter)
	eventually(t, 5*time.Second, "the holder replays", func() bool {
		var n int
		_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM shared_applied`).Scan(&n)
		return rebuilding(waiter) && n > 0 && n < int(head)
	})
	if _, err := db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'engram projection lease' AND pid IN (
		SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)`); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the other node takes the lease over", func() bool { return waiter.lease().HeldHere })
	if err := <-done; err != nil {
		t.Fatalf("live rebuild whose holder died: %v", err)
	}
	eventually(t, 2*time.Second, "neither node reports it rebuilding", func() bool { return !rebuilding(holder) && !rebuilding(waiter) })
	last := write()
	for _, n := range nodes {
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := n.engine.WaitFor(wait, last); err != nil {
			t.Fatalf("%s: WaitFor after the rebuild: %v", n.name, err)
		}
		cancel()
	}
	var applied, distinct, events int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT position), (SELECT count(*) FROM events) FROM shared_applied`).Scan(&applied, &distinct, &events); err != nil {
		t.Fatal(err)
	}
	if applied != events || distinct != events {
		t.Fatalf("%d events applied (%d distinct) of %d in the log, want each once", applied, distinct, events)
	}
	var state, by string
	if err := db.Pool.QueryRow(ctx, `SELECT state, node FROM projection_rebuilds WHERE name = 'shared'`).Scan(&state, &by); err != nil || state != "done" || by != waiter.name {
		t.Fatalf("rebuild record: %s on %s (%v), want done on the new holder %s", state, by, err, waiter.name)
	}
}

// TestFailedLeasedRebuildIsReportedToWhoAsked: a live rebuild that fails
// on the holder is recorded failed with its error, the node that asked
// answers that error, neither node reports the projection rebuilding, and
// the next request runs.
func TestFailedLeasedRebuildIsReportedToWhoAsked(t *testing.T) {
	ctx := context.Background()
	_, nodes, holder, waiter := leasedPair(t)
	for _, n := range nodes {
		n.projection.refuseReset.Store(true)
	}
	_, err := waiter.engine.RebuildLive(ctx, "shared")
	if err == nil || !strings.Contains(err.Error(), "reset refused") || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("a rebuild whose reset fails on the holder: %v, want its failure", err)
	}
	if waiter.engine.Status()["shared"].Rebuilding {
		t.Fatal("the node that answered the failure still reports the projection rebuilding")
	}
	eventually(t, 2*time.Second, "neither node reports it rebuilding", func() bool {
		return !holder.engine.Status()["shared"].Rebuilding && !waiter.engine.Status()["shared"].Rebuilding
	})
	for _, n := range nodes {
		n.projection.refuseReset.Store(false)
	}
	if _, err := holder.engine.RebuildLive(ctx, "shared"); err != nil {
		t.Fatalf("the next request: %v", err)
	}
}
