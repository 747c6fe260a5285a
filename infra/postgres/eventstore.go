package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventlog"
)

// appendLock is the transaction-scoped advisory lock key every Append takes.
//
// Positions come from an identity sequence, and sequence values are handed
// out at INSERT time, not at COMMIT: two concurrent appends could commit
// positions 8 and 7 in that order, and a subscriber that had already read past
// 8 would never see 7. Holding one lock for the whole append transaction makes
// positions commit in order, so ReadAll(after) never skips an event. The cost
// is that appends are serialised database-wide (one writer at a time, like
// SQLite and like a single KurrentDB leader); if that ever limits throughput,
// the alternative is to read only below the oldest in-flight transaction
// (pg_snapshot_xmin + a xid column) instead of locking.
const appendLock int64 = 0x656e6772616d01 // "engram\1"

// notifyChannel is the LISTEN/NOTIFY channel Append signals on commit.
const notifyChannel = "engram_events"

// EventStore is the PostgreSQL domain.EventStore.
type EventStore struct {
	db           *DB
	pollInterval time.Duration
	now          func() time.Time
}

var _ domain.EventStore = (*EventStore)(nil)

// NewEventStore returns the event log of db. Subscribers are woken by
// LISTEN/NOTIFY as soon as an append commits; pollInterval is the fallback
// that bounds how late they are if a notification is lost (or LISTEN is not
// available, e.g. behind a transaction-pooling PgBouncer).
func NewEventStore(db *DB, pollInterval time.Duration) *EventStore {
	if pollInterval <= 0 {
		pollInterval = 500 * time.Millisecond
	}
	return &EventStore{db: db, pollInterval: pollInterval, now: time.Now}
}

// Append implements domain.EventStore.
func (s *EventStore) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	res, err := s.AppendStreams(ctx, []domain.StreamAppend{{Stream: stream, Expected: expected, Events: events}})
	if err != nil {
		return domain.AppendResult{}, err
	}
	return res[0], nil
}

// AppendStreams implements domain.EventStore: every part in one
// transaction, so they are committed together or not at all.
func (s *EventStore) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	if err := domain.CheckStreamAppends(parts); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	events := parts[0].Events
	for _, p := range parts[1:] {
		events = append(slices.Clip(events), p.Events...)
	}
	claims, err := domain.AppendClaims(events)
	if err != nil {
		return nil, fmt.Errorf("postgres: append to %s: %w", parts[0].Stream, err)
	}
	out := make([]domain.AppendResult, len(parts))
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, appendLock); err != nil {
			return fmt.Errorf("postgres: append lock: %w", err)
		}
		// Versions first, then claims, as every log answers: a stale
		// decision is told it is stale rather than what its claims met.
		versions := make([]int64, len(parts))
		for i, p := range parts {
			v, err := expectedVersion(ctx, tx, p)
			if err != nil {
				return err
			}
			versions[i] = v
		}
		// Under the append lock no other append can claim between this
		// check and the inserts below; the primary key would refuse it
		// anyway.
		if len(claims) > 0 {
			var taken string
			err := tx.QueryRow(ctx, `SELECT key FROM claims WHERE key = ANY($1) LIMIT 1`, claims).Scan(&taken)
			if err == nil {
				return fmt.Errorf("postgres: append to %s: %w", parts[0].Stream, &domain.ClaimTakenError{Key: taken})
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("postgres: read claims: %w", err)
			}
		}
		for i, p := range parts {
			res, err := s.appendPart(ctx, tx, p.Stream, versions[i], p.Events)
			if err != nil {
				return err
			}
			out[i] = res
		}
		// Delivered to listeners only when (and if) the transaction commits.
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, notifyChannel); err != nil {
			return fmt.Errorf("postgres: notify append: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// expectedVersion is the version of p's stream, if p expects it.
func expectedVersion(ctx context.Context, tx pgx.Tx, p domain.StreamAppend) (int64, error) {
	// The advisory lock already serialises appends; FOR UPDATE keeps the
	// stream check correct on its own should that lock ever be relaxed.
	current := int64(-1)
	err := tx.QueryRow(ctx, `SELECT version FROM streams WHERE stream = $1 FOR UPDATE`, p.Stream).Scan(&current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("postgres: read stream version: %w", err)
	}
	if p.Expected != domain.ExpectAny && p.Expected != current {
		return 0, fmt.Errorf("append to %s: expected version %d, stream is at %d: %w", p.Stream, p.Expected, current, domain.ErrWrongExpectedVersion)
	}
	return current, nil
}

// appendPart writes one stream's events after its version current, inside
// the append's transaction, which holds the append lock and has checked
// the versions and the claims.
func (s *EventStore) appendPart(ctx context.Context, tx pgx.Tx, stream string, current int64, events []domain.NewEvent) (domain.AppendResult, error) {
	var res domain.AppendResult
	now := s.now().UTC()
	batch := &pgx.Batch{}
	for _, e := range events {
		current++
		id := e.ID
		if id == "" {
			id = uuid.Must(uuid.NewV7()).String()
		}
		at := e.Time
		if at.IsZero() {
			at = now
		}
		payload := []byte(e.Payload)
		if payload == nil {
			payload = []byte{}
		}
		batch.Queue(`INSERT INTO events (id, stream, version, type, schema_version, time, actor_kind, actor_id, actor_user_id, request_id, source, payload)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) RETURNING position`,
			id, stream, current, e.Type, e.SchemaVersion, at.UTC(),
			string(e.Actor.Kind), e.Actor.ID, e.Actor.UserID, e.RequestID, string(e.Source), payload)
	}
	br := tx.SendBatch(ctx, batch)
	var claimKeys []string
	var claimPositions []int64
	for _, e := range events {
		var pos int64
		if err := br.QueryRow().Scan(&pos); err != nil {
			br.Close()
			return domain.AppendResult{}, fmt.Errorf("postgres: append to %s: %w", stream, err)
		}
		res.LastPosition = uint64(pos)
		for _, key := range e.Claims {
			claimKeys, claimPositions = append(claimKeys, key), append(claimPositions, pos)
		}
	}
	if err := br.Close(); err != nil {
		return domain.AppendResult{}, fmt.Errorf("postgres: append to %s: %w", stream, err)
	}
	if len(claimKeys) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO claims (key, position) SELECT * FROM unnest($1::text[], $2::bigint[])`, claimKeys, claimPositions); err != nil {
			return domain.AppendResult{}, fmt.Errorf("postgres: record claims of %s: %w", stream, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO streams (stream, version) VALUES ($1, $2) ON CONFLICT (stream) DO UPDATE SET version = excluded.version`, stream, current); err != nil {
		return domain.AppendResult{}, fmt.Errorf("postgres: bump stream version: %w", err)
	}
	res.NextExpectedVersion = current
	return res, nil
}

const eventColumns = `position, id, stream, version, type, schema_version, time, actor_kind, actor_id, actor_user_id, request_id, source, payload`

// ReadStream implements domain.EventStore.
func (s *EventStore) ReadStream(ctx context.Context, stream string, from uint64) ([]domain.Event, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE stream = $1 AND version >= $2 ORDER BY version`, stream, int64(from))
	if err != nil {
		return nil, fmt.Errorf("postgres: read stream %s: %w", stream, err)
	}
	return scanEvents(rows)
}

// ReadStreamPage returns up to limit of the stream's events from version
// from on, in order (commands.SyncLog).
func (s *EventStore) ReadStreamPage(ctx context.Context, stream string, from uint64, limit int) ([]domain.Event, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE stream = $1 AND version >= $2 ORDER BY version LIMIT $3`, stream, int64(from), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: read stream %s: %w", stream, err)
	}
	return scanEvents(rows)
}

// ReadAll implements domain.EventStore.
func (s *EventStore) ReadAll(ctx context.Context, after uint64, limit int) ([]domain.Event, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE position > $1 ORDER BY position LIMIT $2`, int64(after), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: read all: %w", err)
	}
	return scanEvents(rows)
}

// ReadRange implements domain.EventStore. It pages the log with ReadAll and
// never LISTENs: a bounded read needs no wake, and a subscription would take
// a connection out of the pool for each read (a replay, a catch-up round).
func (s *EventStore) ReadRange(ctx context.Context, after, until uint64, handle func(context.Context, []domain.Event) error) error {
	return eventlog.ReadRange(ctx, after, until, s.ReadAll, handle)
}

// Head implements domain.EventStore.
func (s *EventStore) Head(ctx context.Context) (uint64, error) {
	var head int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&head); err != nil {
		return 0, fmt.Errorf("postgres: head: %w", err)
	}
	return uint64(head), nil
}

// SubscribeAll implements domain.EventStore. It holds one dedicated
// connection that LISTENs for appends (from any process) and re-reads the log
// when woken, or every pollInterval if no notification arrives. If LISTEN
// cannot be set up it falls back to polling alone.
func (s *EventStore) SubscribeAll(ctx context.Context, after uint64, handle func(context.Context, []domain.Event) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake := s.listen(ctx)
	return eventlog.Follow(ctx, after, s.pollInterval, s.ReadAll, func() <-chan struct{} { return wake }, handle)
}

// listen starts a goroutine that LISTENs on a connection taken out of the
// pool and sends on the returned channel (coalescing) for every
// notification, until ctx ends. LISTEN is in effect before listen returns,
// so an append committed after the caller's next read always wakes it. On
// any failure the channel just stays quiet and polling takes over.
func (s *EventStore) listen(ctx context.Context) <-chan struct{} {
	wake := make(chan struct{}, 1)
	pc, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return wake
	}
	// Hijack: the connection is ours and is closed afterwards, never handed
	// back to the pool still subscribed or mid-wait.
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		conn.Close(context.Background())
		return wake
	}
	go func() {
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			conn.Close(closeCtx)
		}()
		for {
			if _, err := conn.WaitForNotification(ctx); err != nil {
				return
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return wake
}

func scanEvents(rows pgx.Rows) ([]domain.Event, error) {
	defer rows.Close()
	var out []domain.Event
	for rows.Next() {
		var e domain.Event
		var position, version int64
		var actorKind string
		var at time.Time
		var payload []byte
		if err := rows.Scan(&position, &e.ID, &e.Stream, &version, &e.Type, &e.SchemaVersion, &at,
			&actorKind, &e.Actor.ID, &e.Actor.UserID, &e.RequestID, &e.Source, &payload); err != nil {
			return nil, fmt.Errorf("postgres: scan event: %w", err)
		}
		e.Position = uint64(position)
		e.Version = uint64(version)
		e.Actor.Kind = domain.ActorKind(actorKind)
		e.Time = at.UTC()
		e.Payload = payload
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read events: %w", err)
	}
	return out, nil
}

// EventStreams returns the stream of each of ids that the log holds;
// absent ids are left out (sync's duplicate and ownership check).
func (s *EventStore) EventStreams(ctx context.Context, ids []string) (map[string]string, error) {
	places, err := s.EventPlaces(ctx, ids)
	out := make(map[string]string, len(places))
	for id, p := range places {
		out[id] = p.Stream
	}
	return out, err
}

// EventPlaces returns the stream and position of each of ids that the log
// holds; absent ids are left out (commands.SyncLog).
func (s *EventStore) EventPlaces(ctx context.Context, ids []string) (map[string]domain.EventPlace, error) {
	out := make(map[string]domain.EventPlace, len(ids))
	rows, err := s.db.Pool.Query(ctx, `SELECT id, stream, position FROM events WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: event streams: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var p domain.EventPlace
		var pos int64
		if err := rows.Scan(&id, &p.Stream, &pos); err != nil {
			return nil, fmt.Errorf("postgres: event streams: %w", err)
		}
		p.Position = uint64(pos)
		out[id] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: event streams: %w", err)
	}
	return out, nil
}

// LastOfType is the position of the stream's last event of type typ, 0
// when it has none (commands.SyncLog).
func (s *EventStore) LastOfType(ctx context.Context, stream, typ string) (uint64, error) {
	var pos int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT COALESCE(MAX(position), 0) FROM events WHERE stream = $1 AND type = $2`, stream, typ).Scan(&pos); err != nil {
		return 0, fmt.Errorf("postgres: last event of a type: %w", err)
	}
	return uint64(pos), nil
}

// StreamVersion is the version of a stream's last event, -1 when the
// stream does not exist.
func (s *EventStore) StreamVersion(ctx context.Context, stream string) (int64, error) {
	version := int64(-1)
	err := s.db.Pool.QueryRow(ctx, `SELECT version FROM streams WHERE stream = $1`, stream).Scan(&version)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("postgres: stream version: %w", err)
	}
	return version, nil
}
