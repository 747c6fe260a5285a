package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
}

var _ domain.EventStore = (*EventStore)(nil)

// NewEventStore returns the event log of db. pollInterval bounds how late a
// subscriber sees appends made by another process on the same file.
func NewEventStore(db *DB, pollInterval time.Duration) *EventStore {
	if pollInterval <= 0 {
		pollInterval = 500 * time.Millisecond
	}
	return &EventStore{db: db, pollInterval: pollInterval, now: time.Now, appended: newSignal()}
}

// Append implements domain.EventStore.
func (s *EventStore) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	if len(events) == 0 {
		return domain.AppendResult{}, fmt.Errorf("sqlite: append to %s: no events", stream)
	}
	var res domain.AppendResult
	err := s.db.WriteTx(ctx, func(tx *sql.Tx) error {
		current := int64(-1)
		err := tx.QueryRowContext(ctx, `SELECT version FROM streams WHERE stream = ?`, stream).Scan(&current)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: read stream version: %w", err)
		}
		if expected != domain.ExpectAny && expected != current {
			return fmt.Errorf("append to %s: expected version %d, stream is at %d: %w", stream, expected, current, domain.ErrWrongExpectedVersion)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO events (id, stream, version, type, schema_version, time_ns, actor_kind, actor_id, actor_user_id, request_id, payload) VALUES (?,?,?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return fmt.Errorf("sqlite: prepare append: %w", err)
		}
		defer stmt.Close()
		now := s.now().UTC()
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
			r, err := stmt.ExecContext(ctx, id, stream, current, e.Type, e.SchemaVersion, at.UnixNano(),
				string(e.Actor.Kind), e.Actor.ID, e.Actor.UserID, e.RequestID, []byte(e.Payload))
			if err != nil {
				return fmt.Errorf("sqlite: append to %s: %w", stream, err)
			}
			pos, err := r.LastInsertId()
			if err != nil {
				return fmt.Errorf("sqlite: append position: %w", err)
			}
			res.LastPosition = uint64(pos)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO streams (stream, version) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET version = excluded.version`, stream, current); err != nil {
			return fmt.Errorf("sqlite: bump stream version: %w", err)
		}
		res.NextExpectedVersion = current
		return nil
	})
	if err != nil {
		return domain.AppendResult{}, err
	}
	s.appended.broadcast()
	return res, nil
}

const eventColumns = `position, id, stream, version, type, schema_version, time_ns, actor_kind, actor_id, actor_user_id, request_id, payload`

// ReadStream implements domain.EventStore.
func (s *EventStore) ReadStream(ctx context.Context, stream string, from uint64) ([]domain.Event, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE stream = ? AND version >= ? ORDER BY version`, stream, from)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read stream %s: %w", stream, err)
	}
	return scanEvents(rows)
}

// ReadAll implements domain.EventStore.
func (s *EventStore) ReadAll(ctx context.Context, after uint64, limit int) ([]domain.Event, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE position > ? ORDER BY position LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read all: %w", err)
	}
	return scanEvents(rows)
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
			&actorKind, &e.Actor.ID, &e.Actor.UserID, &e.RequestID, &payload); err != nil {
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
	out := make(map[string]string, len(ids))
	for start := 0; start < len(ids); start += memIDChunk {
		chunk := ids[start:min(start+memIDChunk, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.db.read.QueryContext(ctx, `SELECT id, stream FROM events WHERE id IN (`+memPlaceholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: event streams: %w", err)
		}
		for rows.Next() {
			var id, stream string
			if err := rows.Scan(&id, &stream); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: event streams: %w", err)
			}
			out[id] = stream
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
