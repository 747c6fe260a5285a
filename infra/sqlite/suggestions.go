package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// SuggestionsProjection is the name of the suggestions read model.
const SuggestionsProjection = "suggestions"

// Suggestions is the read model of the suggestions processing passes
// proposed: it finds a suggestion by id for its user, and lists an
// agent's suggestions by status. Deleting an agent removes its
// suggestions.
type Suggestions struct {
	tableModel
}

// NewSuggestions returns the read model over db.
func NewSuggestions(db *DB) *Suggestions {
	return &Suggestions{tableModel{db: db, name: SuggestionsProjection, tables: []exportTable{{name: "suggestions", orderBy: "id"}}}}
}

// Apply implements projections.Projection.
func (s *Suggestions) Apply(ctx context.Context, events []domain.Event) error {
	return s.db.ApplyEvents(ctx, SuggestionsProjection, events, func(tx *sql.Tx, e domain.Event) error {
		exec := func(query string, args ...any) error {
			if _, err := tx.ExecContext(ctx, query, args...); err != nil {
				return fmt.Errorf("sqlite: suggestions: %w", err)
			}
			return nil
		}
		switch e.Type {
		case processing.SuggestionCreated{}.EventType():
			var p processing.SuggestionCreated
			if err := e.Decode(&p); err != nil {
				return err
			}
			sources, err := json.Marshal(p.Sources)
			if err != nil {
				return err
			}
			return exec(`INSERT INTO suggestions (id, user_id, agent_id, transition, memory_type, content, confidence, sources, status, fingerprint, created_at, expires_at, reason, promoted_to)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '') ON CONFLICT (id) DO NOTHING`,
				p.SuggestionID, p.UserID, p.AgentID, string(p.Transition), p.MemoryType, string(p.Content), p.Confidence, string(sources),
				string(processing.Pending), p.Fingerprint, dbTime(p.CreatedAt), dbTime(p.ExpiresAt), processing.LintReason(p.LintFailure))
		case processing.SuggestionResolved{}.EventType():
			var p processing.SuggestionResolved
			if err := e.Decode(&p); err != nil {
				return err
			}
			// A promotion came first (see MemoryCreated below): the
			// memory exists, so the suggestion stays promoted.
			return exec(`UPDATE suggestions SET status = ?, resolved_at = ?, reason = ?, promoted_to = ? WHERE id = ? AND user_id = ? AND status = 'pending'`,
				string(p.Status), dbTime(p.ResolvedAt), p.Reason, p.PromotedTo, p.SuggestionID, p.UserID)
		case memory.MemoryCreated{}.EventType():
			if !bytes.Contains(e.Payload, []byte(`"promotes"`)) {
				return nil // most memories come from no suggestion: skip decoding them
			}
			var p memory.MemoryCreated
			if err := e.Decode(&p); err != nil {
				return err
			}
			if p.Promotes == nil {
				return nil
			}
			// Accepting records the promotion in the memory's creation.
			// It wins over a rejection or expiry that a concurrent request
			// recorded on the cognition stream just before: the memory
			// exists, and the suggestion says what it became.
			status := processing.Promoted
			if p.Promotes.Modified {
				status = processing.Modified
			}
			return exec(`UPDATE suggestions SET status = ?, resolved_at = ?, reason = '', promoted_to = ? WHERE id = ? AND user_id = ? AND agent_id = ?`,
				string(status), dbTime(e.Time), string(p.Type)+":"+p.MemoryID, p.Promotes.SuggestionID, p.UserID, p.AgentID)
		case memory.AgentDeleted{}.EventType():
			var p memory.AgentDeleted
			if err := e.Decode(&p); err != nil {
				return err
			}
			return exec(`DELETE FROM suggestions WHERE user_id = ? AND agent_id = ?`, p.UserID, p.AgentID)
		}
		return nil
	}, nil)
}

const suggestionColumns = `id, agent_id, transition, memory_type, content, confidence, sources, status, fingerprint, created_at, expires_at, resolved_at, reason, promoted_to`

// Suggestion returns one suggestion of the user.
func (s *Suggestions) Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, bool, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT `+suggestionColumns+` FROM suggestions WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return processing.Suggestion{}, false, fmt.Errorf("sqlite: suggestion: %w", err)
	}
	list, err := scanSuggestions(rows)
	if err != nil || len(list) == 0 {
		return processing.Suggestion{}, false, err
	}
	return list[0], true, nil
}

// ListSuggestions returns the suggestions q selects.
func (s *Suggestions) ListSuggestions(ctx context.Context, q processing.SuggestionQuery) ([]processing.Suggestion, error) {
	where, args := `user_id = ? AND agent_id = ?`, []any{q.UserID, q.AgentID}
	now := dbTime(q.Now)
	switch q.Status {
	case "":
	case processing.Pending:
		where += ` AND status = 'pending' AND expires_at > ?`
		args = append(args, now)
	case processing.Expired:
		where += ` AND (status = 'expired' OR (status = 'pending' AND expires_at <= ?))`
		args = append(args, now)
	default:
		where += ` AND status = ?`
		args = append(args, string(q.Status))
	}
	args = append(args, q.Limit)
	rows, err := s.db.read.QueryContext(ctx, `SELECT `+suggestionColumns+` FROM suggestions WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list suggestions: %w", err)
	}
	return scanSuggestions(rows)
}

// CountPending counts an agent's suggestions pending at now.
func (s *Suggestions) CountPending(ctx context.Context, userID, agentID string, now time.Time) (int, error) {
	var n int
	err := s.db.read.QueryRowContext(ctx, `SELECT count(*) FROM suggestions WHERE user_id = ? AND agent_id = ? AND status = 'pending' AND expires_at > ?`,
		userID, agentID, dbTime(now)).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlite: count suggestions: %w", err)
	}
	return n, nil
}

func scanSuggestions(rows *sql.Rows) ([]processing.Suggestion, error) {
	defer rows.Close()
	var out []processing.Suggestion
	for rows.Next() {
		var sg processing.Suggestion
		var content, sources, status, transition, created, expires string
		var resolved sql.NullString
		if err := rows.Scan(&sg.ID, &sg.AgentID, &transition, &sg.MemoryType, &content, &sg.Confidence, &sources, &status,
			&sg.Fingerprint, &created, &expires, &resolved, &sg.Reason, &sg.PromotedTo); err != nil {
			return nil, fmt.Errorf("sqlite: scan suggestion: %w", err)
		}
		sg.Transition, sg.Status, sg.Content = processing.Transition(transition), processing.Status(status), json.RawMessage(content)
		if err := json.Unmarshal([]byte(sources), &sg.Sources); err != nil {
			return nil, fmt.Errorf("sqlite: suggestion sources: %w", err)
		}
		var err error
		if sg.CreatedAt, err = parseDBTime(sql.NullString{String: created, Valid: true}); err != nil {
			return nil, err
		}
		if sg.ExpiresAt, err = parseDBTime(sql.NullString{String: expires, Valid: true}); err != nil {
			return nil, err
		}
		if resolved.Valid {
			t, err := parseDBTime(resolved)
			if err != nil {
				return nil, err
			}
			sg.ResolvedAt = &t
		}
		out = append(out, sg)
	}
	return out, rows.Err()
}

// SuggestionCounts counts an agent's suggestions by status, a pending one
// past its expiry as expired (judged at the wall clock: the stats
// endpoint has no injected clock).
func (s *Suggestions) SuggestionCounts(ctx context.Context, userID, agentID string) (map[string]int, error) {
	rows, err := s.db.read.QueryContext(ctx, `SELECT CASE WHEN status = 'pending' AND expires_at <= ? THEN 'expired' ELSE status END AS st, count(*)
		FROM suggestions WHERE user_id = ? AND agent_id = ? GROUP BY st`, dbTime(time.Now()), userID, agentID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count suggestions: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("sqlite: count suggestions: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}
