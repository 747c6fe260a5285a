package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
)

// Suggestions is the read model of the suggestions processing passes
// proposed (processing.SuggestionsReadModel) in PostgreSQL: it finds a
// suggestion by id for its user, and lists and counts an agent's
// suggestions by status.
type Suggestions struct {
	tableModel
}

var _ processing.SuggestionsReadModel = (*Suggestions)(nil)

// NewSuggestions returns the read model stored in db.
func NewSuggestions(db *DB) *Suggestions {
	return &Suggestions{tableModel{db: db, name: "suggestions", tables: []string{"suggestions"}}}
}

// Apply implements processing.SuggestionsReadModel.
func (s *Suggestions) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, processing.SuggestionsTx, domain.Event) error) error {
	return applyBatch(ctx, s.db, s.name, events, func(b batchTx) processing.SuggestionsTx { return suggestionsTx{b} }, apply)
}

// suggestionsTx is processing.SuggestionsTx over one batch's transaction.
type suggestionsTx struct{ batchTx }

func (t suggestionsTx) AddSuggestion(ctx context.Context, p processing.SuggestionCreated) error {
	sources, err := json.Marshal(p.Sources)
	if err != nil {
		return err
	}
	return t.run(ctx, `INSERT INTO suggestions (id, user_id, agent_id, transition, memory_type, content, confidence, sources, status, fingerprint, created_at, expires_at, reason, promoted_to)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, '') ON CONFLICT (id) DO NOTHING`,
		p.SuggestionID, p.UserID, p.AgentID, string(p.Transition), p.MemoryType, string(p.Content), p.Confidence, string(sources),
		string(processing.Pending), p.Fingerprint, p.CreatedAt.UTC(), p.ExpiresAt.UTC(), processing.LintReason(p.LintFailure))
}

func (t suggestionsTx) Resolve(ctx context.Context, p processing.SuggestionResolved) error {
	return t.run(ctx, `UPDATE suggestions SET status = $1, resolved_at = $2, reason = $3, promoted_to = $4 WHERE id = $5 AND user_id = $6 AND status = 'pending'`,
		string(p.Status), p.ResolvedAt.UTC(), p.Reason, p.PromotedTo, p.SuggestionID, p.UserID)
}

// Promote is unconditional on the status: a promotion wins over a
// rejection or expiry that a concurrent request recorded just before, since
// the memory exists.
func (t suggestionsTx) Promote(ctx context.Context, r processing.SuggestionResolved) error {
	return t.run(ctx, `UPDATE suggestions SET status = $1, resolved_at = $2, reason = '', promoted_to = $3 WHERE id = $4 AND user_id = $5 AND agent_id = $6`,
		string(r.Status), r.ResolvedAt.UTC(), r.PromotedTo, r.SuggestionID, r.UserID, r.AgentID)
}

func (t suggestionsTx) DeleteAgentSuggestions(ctx context.Context, userID, agentID string) error {
	return t.run(ctx, `DELETE FROM suggestions WHERE user_id = $1 AND agent_id = $2`, userID, agentID)
}

const suggestionColumns = `id, agent_id, transition, memory_type, content, confidence, sources, status, fingerprint, created_at, expires_at, resolved_at, reason, promoted_to`

// Suggestion returns one suggestion of the user.
func (s *Suggestions) Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, bool, error) {
	list, err := s.query(ctx, `SELECT `+suggestionColumns+` FROM suggestions WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil || len(list) == 0 {
		return processing.Suggestion{}, false, err
	}
	return list[0], true, nil
}

// SuggestionOwner tells whose suggestion id is, across users (suggestion
// ids are global): an import keeps a suggestion's id only when it is free.
func (s *Suggestions) SuggestionOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error) {
	err = s.db.Pool.QueryRow(ctx, `SELECT user_id, agent_id FROM suggestions WHERE id = $1`, id).Scan(&userID, &agentID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("postgres: suggestion owner: %w", err)
	}
	return userID, agentID, true, nil
}

// ListSuggestions returns the suggestions q selects, newest first.
func (s *Suggestions) ListSuggestions(ctx context.Context, q processing.SuggestionQuery) ([]processing.Suggestion, error) {
	where, args := `user_id = $1 AND agent_id = $2`, []any{q.UserID, q.AgentID}
	switch q.Status {
	case "":
	case processing.Pending:
		args = append(args, q.Now.UTC())
		where += fmt.Sprintf(` AND status = 'pending' AND expires_at > $%d`, len(args))
	case processing.Expired:
		args = append(args, q.Now.UTC())
		where += fmt.Sprintf(` AND (status = 'expired' OR (status = 'pending' AND expires_at <= $%d))`, len(args))
	default:
		args = append(args, string(q.Status))
		where += fmt.Sprintf(` AND status = $%d`, len(args))
	}
	args = append(args, q.Limit)
	return s.query(ctx, fmt.Sprintf(`SELECT `+suggestionColumns+` FROM suggestions WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT $%d`, len(args)), args...)
}

// CountPending counts an agent's suggestions pending at now.
func (s *Suggestions) CountPending(ctx context.Context, userID, agentID string, now time.Time) (int, error) {
	var n int
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM suggestions WHERE user_id = $1 AND agent_id = $2 AND status = 'pending' AND expires_at > $3`,
		userID, agentID, now.UTC()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: count suggestions: %w", err)
	}
	return n, nil
}

// SuggestionCounts counts an agent's suggestions by status, a pending one
// past its expiry as expired (judged at the wall clock: the stats
// endpoint has no injected clock).
func (s *Suggestions) SuggestionCounts(ctx context.Context, userID, agentID string) (map[string]int, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT CASE WHEN status = 'pending' AND expires_at <= $1 THEN 'expired' ELSE status END AS st, count(*)
		FROM suggestions WHERE user_id = $2 AND agent_id = $3 GROUP BY st`, time.Now().UTC(), userID, agentID)
	if err != nil {
		return nil, fmt.Errorf("postgres: count suggestions: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("postgres: count suggestions: %w", err)
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: count suggestions: %w", err)
	}
	return out, nil
}

func (s *Suggestions) query(ctx context.Context, query string, args ...any) ([]processing.Suggestion, error) {
	rows, err := s.db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: suggestions: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (processing.Suggestion, error) {
		var sg processing.Suggestion
		var content, sources, status, transition string
		if err := row.Scan(&sg.ID, &sg.AgentID, &transition, &sg.MemoryType, &content, &sg.Confidence, &sources, &status,
			&sg.Fingerprint, &sg.CreatedAt, &sg.ExpiresAt, &sg.ResolvedAt, &sg.Reason, &sg.PromotedTo); err != nil {
			return processing.Suggestion{}, fmt.Errorf("postgres: scan suggestion: %w", err)
		}
		sg.Transition, sg.Status, sg.Content = processing.Transition(transition), processing.Status(status), json.RawMessage(content)
		if err := json.Unmarshal([]byte(sources), &sg.Sources); err != nil {
			return processing.Suggestion{}, fmt.Errorf("postgres: suggestion sources: %w", err)
		}
		sg.CreatedAt, sg.ExpiresAt, sg.ResolvedAt = sg.CreatedAt.UTC(), sg.ExpiresAt.UTC(), utcOrNil(sg.ResolvedAt)
		return sg, nil
	})
}
