package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
)

// suggestionsCheckpoint keys the suggestions read model's checkpoint.
const suggestionsCheckpoint = "suggestions"

// Suggestions is the read model of the suggestions processing passes
// proposed (processing.SuggestionsReadModel): it finds a suggestion by id
// for its user, and lists an agent's suggestions by status.
type Suggestions struct {
	tableModel
}

var _ processing.SuggestionsReadModel = (*Suggestions)(nil)

// NewSuggestions returns the read model over db.
func NewSuggestions(db *DB) *Suggestions {
	return &Suggestions{tableModel{db: db, name: suggestionsCheckpoint, tables: suggestionsTables()}}
}

// suggestionsTables are the read model's tables with their primary keys.
func suggestionsTables() []exportTable {
	return []exportTable{{name: "suggestions", orderBy: "id"}}
}

// Apply implements processing.SuggestionsReadModel.
func (s *Suggestions) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, processing.SuggestionsTx, domain.Event) error) error {
	return applyBatch(ctx, s.db, suggestionsCheckpoint, events, func(b *batchTx) processing.SuggestionsTx { return suggestionsTx{b} }, apply, nil)
}

// suggestionsTx is processing.SuggestionsTx over one batch's transaction.
type suggestionsTx struct{ *batchTx }

func (t suggestionsTx) AddSuggestion(ctx context.Context, p processing.SuggestionCreated) error {
	sources, err := json.Marshal(p.Sources)
	if err != nil {
		return err
	}
	return t.run(`INSERT INTO suggestions (id, user_id, agent_id, transition, memory_type, content, confidence, sources, status, fingerprint, created_at, expires_at, reason, promoted_to)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '') ON CONFLICT (id) DO NOTHING`,
		p.SuggestionID, p.UserID, p.AgentID, string(p.Transition), p.MemoryType, string(p.Content), p.Confidence, string(sources),
		string(processing.Pending), p.Fingerprint, dbTime(p.CreatedAt), dbTime(p.ExpiresAt), processing.LintReason(p.LintFailure))
}

func (t suggestionsTx) Resolve(ctx context.Context, p processing.SuggestionResolved) error {
	return t.run(`UPDATE suggestions SET status = ?, resolved_at = ?, reason = ?, promoted_to = ? WHERE id = ? AND user_id = ? AND status = 'pending'`,
		string(p.Status), dbTime(p.ResolvedAt), p.Reason, p.PromotedTo, p.SuggestionID, p.UserID)
}

// Promote is unconditional on the status: a promotion wins over a
// rejection or expiry that a concurrent request recorded just before, since
// the memory exists.
func (t suggestionsTx) Promote(ctx context.Context, r processing.SuggestionResolved) error {
	return t.run(`UPDATE suggestions SET status = ?, resolved_at = ?, reason = '', promoted_to = ? WHERE id = ? AND user_id = ? AND agent_id = ?`,
		string(r.Status), dbTime(r.ResolvedAt), r.PromotedTo, r.SuggestionID, r.UserID, r.AgentID)
}

func (t suggestionsTx) DeleteAgentSuggestions(ctx context.Context, userID, agentID string) error {
	return t.run(`DELETE FROM suggestions WHERE user_id = ? AND agent_id = ?`, userID, agentID)
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

// SuggestionOwner tells whose suggestion id is, across users (suggestion
// ids are global): an import keeps a suggestion's id only when it is free.
func (s *Suggestions) SuggestionOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error) {
	err = s.db.read.QueryRowContext(ctx, `SELECT user_id, agent_id FROM suggestions WHERE id = ?`, id).Scan(&userID, &agentID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("sqlite: suggestion owner: %w", err)
	}
	return userID, agentID, true, nil
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
