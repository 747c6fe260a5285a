package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventlog"
)

// EventStore is the embedded domain.EventStore.
type EventStore struct {
	db           *DB
	pollInterval time.Duration
	now          func() time.Time
	appended     *signal

	// queue holds the appends waiting for the writer, oldest first; its
	// head leads the next group commit (see Append).
	mu    sync.Mutex
	queue []*appendRequest

	// observer hears of every group committed (nil: none); set before the
	// first Append (ObserveCommits).
	observer CommitObserver
}

// CommitObserver hears of every group commit: how many appends it took
// and how long its commit (with Durable, the sync to disk) took.
type CommitObserver interface {
	GroupCommitted(appends int, commit time.Duration)
}

// ObserveCommits reports every group commit to o (metrics). It must be
// called before the first Append.
func (s *EventStore) ObserveCommits(o CommitObserver) { s.observer = o }

var _ domain.EventStore = (*EventStore)(nil)

// maxGroup bounds the appends one commit takes, so a leader's own caller
// is not held up indefinitely by the ones queued behind it.
const maxGroup = 256

// appendRequest is one caller's Append (or AppendStreams) while it waits
// in the queue.
type appendRequest struct {
	ctx   context.Context
	parts []domain.StreamAppend

	res []domain.AppendResult // one per part
	err error
	// wake is closed once: when the request is done (done set first) or
	// when it has become the head of the queue and must lead a commit.
	wake chan struct{}
	done bool
}

// NewEventStore returns the event log of db. pollInterval bounds how late a
// subscriber sees appends made by another process on the same file.
func NewEventStore(db *DB, pollInterval time.Duration) *EventStore {
	if pollInterval <= 0 {
		pollInterval = 500 * time.Millisecond
	}
	return &EventStore{db: db, pollInterval: pollInterval, now: time.Now, appended: newSignal()}
}

// Append implements domain.EventStore.
//
// Appends are committed in groups: an append that finds the queue empty
// leads; it waits for the writer, then commits every append queued by then
// in one transaction (one sync of the log with Durable) and hands the lead
// to the oldest append still waiting. Each append in a group runs inside
// its own savepoint, after the ones queued before it, so its expected
// version sees theirs and its failure undoes only itself. An append whose
// ctx ends before its group is formed is left out and fails with ctx's
// error; once in a group it is committed with it, and its caller waits for
// that outcome (at most one commit away) rather than leave not knowing it.
func (s *EventStore) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	res, err := s.AppendStreams(ctx, []domain.StreamAppend{{Stream: stream, Expected: expected, Events: events}})
	if err != nil {
		return domain.AppendResult{}, err
	}
	return res[0], nil
}

// AppendStreams implements domain.EventStore: the parts are one append of
// a group commit, in one savepoint, so they are stored together or not at
// all.
func (s *EventStore) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	if err := domain.CheckStreamAppends(parts); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: append to %s: %w", parts[0].Stream, err)
	}
	req := &appendRequest{ctx: ctx, parts: parts, wake: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, req)
	leads := len(s.queue) == 1
	s.mu.Unlock()
	if !leads {
		<-req.wake
		if req.done {
			return req.res, req.err
		}
	}
	s.lead(ctx)
	return req.res, req.err
}

// lead commits the group at the head of the queue (the caller's append
// first), then wakes its members and the next leader.
func (s *EventStore) lead(ctx context.Context) {
	// The group must not fail because the leader's caller went away.
	ctx = context.WithoutCancel(ctx)
	var group []*appendRequest
	commit, err := s.db.logTx(ctx, func(tx *sql.Tx) error {
		// Taken once the writer is ours: whatever queued while the leader
		// waited for it joins this commit.
		group = s.takeGroup()
		return s.appendGroup(ctx, tx, group)
	})
	if group == nil { // the transaction did not start
		group = s.takeGroup()
	}
	committed := 0
	for _, r := range group {
		switch {
		case err != nil && r.err == nil:
			r.res, r.err = nil, err
		case r.err == nil:
			committed++
		}
	}
	if committed > 0 && s.observer != nil {
		s.observer.GroupCommitted(committed, commit)
	}
	if committed > 0 {
		s.appended.broadcast()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.queue[:len(group)])
	s.queue = s.queue[len(group):]
	for _, r := range group[1:] {
		r.done = true
		close(r.wake)
	}
	if len(s.queue) > 0 {
		close(s.queue[0].wake)
	}
}

// takeGroup returns the appends that the next commit takes: the head of
// the queue, up to maxGroup. They stay queued (so newcomers do not lead)
// until lead removes them.
func (s *EventStore) takeGroup() []*appendRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queue[:min(len(s.queue), maxGroup)])
}

// insertEvent appends one event to the log.
const insertEvent = `INSERT INTO events (id, stream, version, type, schema_version, time_ns, actor_kind, actor_id, actor_user_id, request_id, source, payload) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`

// appendGroup writes each append of group in its own savepoint and records
// its outcome; it returns an error only when the transaction itself is
// broken. The statements run per event and per claim are prepared once
// for the group (batchTx): an import of 10,000 memories appends 20,000
// events and 10,000 claims in one append.
func (s *EventStore) appendGroup(ctx context.Context, tx *sql.Tx, group []*appendRequest) error {
	b := s.db.newBatch(ctx, tx)
	now := s.now().UTC()
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = fmt.Errorf("sqlite: append to %s: %w", r.parts[0].Stream, err)
			continue
		}
		if err := b.run(`SAVEPOINT append`); err != nil {
			return fmt.Errorf("sqlite: savepoint: %w", err)
		}
		r.res, r.err = appendParts(b, r, now)
		if r.err != nil {
			if err := b.run(`ROLLBACK TO append`); err != nil {
				return fmt.Errorf("sqlite: roll back to savepoint: %w", err)
			}
		}
		if err := b.run(`RELEASE append`); err != nil {
			return fmt.Errorf("sqlite: release savepoint: %w", err)
		}
	}
	return nil
}

// appendParts writes the parts of r in order; the caller's savepoint
// undoes them all should one fail.
// Versions first, then claims, as every log answers: a stale decision is
// told it is stale rather than what its claims met.
func appendParts(b *batchTx, r *appendRequest, now time.Time) ([]domain.AppendResult, error) {
	versions := make([]int64, len(r.parts))
	for i, p := range r.parts {
		var err error
		if versions[i], err = expectedVersion(b, p); err != nil {
			return nil, err
		}
	}
	if err := checkClaims(b, r); err != nil {
		return nil, err
	}
	out := make([]domain.AppendResult, len(r.parts))
	for i, part := range r.parts {
		res, err := appendOne(b, part, versions[i], now)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}

// expectedVersion is the version of p's stream, if p expects it.
func expectedVersion(b *batchTx, p domain.StreamAppend) (int64, error) {
	current := int64(-1)
	err := b.queryRow(`SELECT version FROM streams WHERE stream = ?`, p.Stream).Scan(&current)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlite: read stream version: %w", err)
	}
	if p.Expected != domain.ExpectAny && p.Expected != current {
		return 0, fmt.Errorf("append to %s: expected version %d, stream is at %d: %w", p.Stream, p.Expected, current, domain.ErrWrongExpectedVersion)
	}
	return current, nil
}

// appendOne writes r's events after its stream's version current.
func appendOne(b *batchTx, r domain.StreamAppend, current int64, now time.Time) (domain.AppendResult, error) {
	var res domain.AppendResult
	insert, err := b.stmt(insertEvent)
	if err != nil {
		return res, fmt.Errorf("sqlite: prepare append: %w", err)
	}
	for _, e := range r.Events {
		current++
		id := e.ID
		if id == "" {
			id = uuid.Must(uuid.NewV7()).String()
		}
		at := e.Time
		if at.IsZero() {
			at = now
		}
		out, err := insert.ExecContext(b.ctx, id, r.Stream, current, e.Type, e.SchemaVersion, at.UnixNano(),
			string(e.Actor.Kind), e.Actor.ID, e.Actor.UserID, e.RequestID, string(e.Source), []byte(e.Payload))
		if err != nil {
			return domain.AppendResult{}, fmt.Errorf("sqlite: append to %s: %w", r.Stream, err)
		}
		pos, err := out.LastInsertId()
		if err != nil {
			return domain.AppendResult{}, fmt.Errorf("sqlite: append position: %w", err)
		}
		res.LastPosition = uint64(pos)
		for _, key := range e.Claims {
			if err := b.run(`INSERT INTO claims (key, position) VALUES (?, ?)`, key, pos); err != nil {
				return domain.AppendResult{}, fmt.Errorf("sqlite: record claim of %s: %w", r.Stream, err)
			}
		}
	}
	if err := b.run(`INSERT INTO streams (stream, version) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET version = excluded.version`, r.Stream, current); err != nil {
		return domain.AppendResult{}, fmt.Errorf("sqlite: bump stream version: %w", err)
	}
	res.NextExpectedVersion = current
	return res, nil
}

// checkClaims refuses r if its events (of every part) claim a key twice
// or a key that the log (this transaction included: the appends before r
// in its group) has claimed already.
func checkClaims(b *batchTx, r *appendRequest) error {
	events := r.parts[0].Events
	for _, p := range r.parts[1:] {
		events = append(slices.Clip(events), p.Events...)
	}
	stream := r.parts[0].Stream
	claims, err := domain.AppendClaims(events)
	if err != nil {
		return fmt.Errorf("sqlite: append to %s: %w", stream, err)
	}
	for _, key := range claims {
		taken, err := b.exists(`SELECT 1 FROM claims WHERE key = ?`, key)
		if err != nil {
			return fmt.Errorf("sqlite: read claims: %w", err)
		}
		if taken {
			return fmt.Errorf("sqlite: append to %s: %w", stream, &domain.ClaimTakenError{Key: key})
		}
	}
	return nil
}

const eventColumns = `position, id, stream, version, type, schema_version, time_ns, actor_kind, actor_id, actor_user_id, request_id, source, payload`

// ReadStream implements domain.EventStore.
func (s *EventStore) ReadStream(ctx context.Context, stream string, from uint64) ([]domain.Event, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE stream = ? AND version >= ? ORDER BY version`, stream, from)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read stream %s: %w", stream, err)
	}
	return scanEvents(rows)
}

// ReadStreamPage returns up to limit of the stream's events from version
// from on, in order (commands.SyncLog): export and sync read long streams
// in pages, in constant memory.
func (s *EventStore) ReadStreamPage(ctx context.Context, stream string, from uint64, limit int) ([]domain.Event, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE stream = ? AND version >= ? ORDER BY version LIMIT ?`, stream, from, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read stream %s: %w", stream, err)
	}
	return scanEvents(rows)
}

// ReadAll implements domain.EventStore.
func (s *EventStore) ReadAll(ctx context.Context, after uint64, limit int) ([]domain.Event, error) {
	rows, err := s.db.queryHot(ctx, `SELECT `+eventColumns+` FROM events WHERE position > ? ORDER BY position LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read all: %w", err)
	}
	return scanEvents(rows)
}

// ReadRange implements domain.EventStore.
func (s *EventStore) ReadRange(ctx context.Context, after, until uint64, handle func(context.Context, []domain.Event) error) error {
	return eventlog.ReadRange(ctx, after, until, s.ReadAll, handle)
}

// Head implements domain.EventStore.
func (s *EventStore) Head(ctx context.Context) (uint64, error) {
	var head uint64
	if err := s.db.read.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&head); err != nil {
		return 0, fmt.Errorf("sqlite: head: %w", err)
	}
	return head, nil
}

// SubscribeAll implements domain.EventStore.
func (s *EventStore) SubscribeAll(ctx context.Context, after uint64, handle func(context.Context, []domain.Event) error) error {
	return eventlog.Follow(ctx, after, s.pollInterval, s.ReadAll, s.appended.wait, handle)
}

func scanEvents(rows *sql.Rows) ([]domain.Event, error) {
	defer rows.Close()
	var out []domain.Event
	for rows.Next() {
		var e domain.Event
		var timeNS int64
		var actorKind string
		var payload []byte
		if err := rows.Scan(&e.Position, &e.ID, &e.Stream, &e.Version, &e.Type, &e.SchemaVersion, &timeNS,
			&actorKind, &e.Actor.ID, &e.Actor.UserID, &e.RequestID, &e.Source, &payload); err != nil {
			return nil, fmt.Errorf("sqlite: scan event: %w", err)
		}
		e.Actor.Kind = domain.ActorKind(actorKind)
		e.Time = time.Unix(0, timeNS).UTC()
		e.Payload = payload
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read events: %w", err)
	}
	return out, nil
}

// signal wakes every waiter once per broadcast.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) broadcast() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// EventStreams returns the stream of each of ids that the log holds;
// absent ids are left out. Sync uses it to skip events it already has and
// to refuse ids another stream owns, without reading any payload.
func (s *EventStore) EventStreams(ctx context.Context, ids []string) (map[string]string, error) {
	places, err := s.EventPlaces(ctx, ids)
	return streamsOf(places), err
}

// streamsOf keeps the streams of places.
func streamsOf(places map[string]domain.EventPlace) map[string]string {
	out := make(map[string]string, len(places))
	for id, p := range places {
		out[id] = p.Stream
	}
	return out
}

// EventPlaces returns the stream and position of each of ids that the log
// holds; absent ids are left out (commands.SyncLog).
func (s *EventStore) EventPlaces(ctx context.Context, ids []string) (map[string]domain.EventPlace, error) {
	out := make(map[string]domain.EventPlace, len(ids))
	for start := 0; start < len(ids); start += memIDChunk {
		chunk := ids[start:min(start+memIDChunk, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.db.read.QueryContext(ctx, `SELECT id, stream, position FROM events WHERE id IN (`+memPlaceholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: event streams: %w", err)
		}
		for rows.Next() {
			var id string
			var p domain.EventPlace
			if err := rows.Scan(&id, &p.Stream, &p.Position); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: event streams: %w", err)
			}
			out[id] = p
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: event streams: %w", err)
		}
	}
	return out, nil
}

// LastOfType is the position of the stream's last event of type typ, 0
// when it has none (commands.SyncLog).
func (s *EventStore) LastOfType(ctx context.Context, stream, typ string) (uint64, error) {
	var pos uint64
	if err := s.db.read.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events WHERE stream = ? AND type = ?`, stream, typ).Scan(&pos); err != nil {
		return 0, fmt.Errorf("sqlite: last event of a type: %w", err)
	}
	return pos, nil
}

// StreamVersion is the version of a stream's last event, -1 when the
// stream does not exist (what Append expects for an exact-version append).
func (s *EventStore) StreamVersion(ctx context.Context, stream string) (int64, error) {
	version := int64(-1)
	err := s.db.read.QueryRowContext(ctx, `SELECT version FROM streams WHERE stream = ?`, stream).Scan(&version)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlite: stream version: %w", err)
	}
	return version, nil
}
