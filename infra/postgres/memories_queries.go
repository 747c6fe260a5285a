package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
)

// The queries of the memories read model, answering as the SQLite store's
// (infra/sqlite/memories_queries.go) do: the same pages, orders, cursors
// and counts, which internal/readmodeltest.RunMemoryQueries holds both to.
// Every one is scoped by user: another user's agent or memory is
// indistinguishable from a missing one. Id lists are bound as one array
// parameter, so no query is split into chunks.

const memAgentColumns = `a.user_id, a.agent_id, a.embedding_model, a.dimensions, a.created_at,
	a.stored_memories - a.forgotten_memories,
	a.stored_memories, a.content_bytes`

// Agent returns one agent of the user; (zero, false, nil) if there is none.
func (m *Memories) Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error) {
	agents, err := m.agents(ctx, `SELECT `+memAgentColumns+` FROM agents a WHERE a.user_id = $1 AND a.agent_id = $2`, userID, agentID)
	if err != nil || len(agents) == 0 {
		return memory.AgentView{}, false, err
	}
	return agents[0], true, nil
}

// ListAgents returns one page of the user's agents in agent_id order; the
// cursor is the last agent_id returned (as in the SQLite store).
func (m *Memories) ListAgents(ctx context.Context, q memory.AgentListQuery) (memory.AgentPage, error) {
	limit := listLimit(q.Limit)
	after := ""
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || memory.ValidateAgentID(string(raw)) != nil {
			return memory.AgentPage{}, errInvalidCursor()
		}
		after = string(raw)
	}
	agents, err := m.agents(ctx, `SELECT `+memAgentColumns+` FROM agents a WHERE a.user_id = $1 AND a.agent_id > $2
		ORDER BY a.agent_id LIMIT $3`, q.UserID, after, limit+1)
	if err != nil {
		return memory.AgentPage{}, err
	}
	page := memory.AgentPage{Agents: agents}
	if len(agents) > limit {
		page.Agents = agents[:limit]
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(page.Agents[limit-1].AgentID))
	}
	return page, nil
}

func (m *Memories) agents(ctx context.Context, query string, args ...any) ([]memory.AgentView, error) {
	rows, err := m.db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: agents: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.AgentView, error) {
		var a memory.AgentView
		var created string
		if err := row.Scan(&a.UserID, &a.AgentID, &a.EmbeddingModel, &a.Dimensions, &created, &a.MemoryCount, &a.StoredMemories, &a.TextBytes); err != nil {
			return a, err
		}
		var err error
		a.CreatedAt, err = parseMemTime(created)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: agents: %w", err)
	}
	return out, nil
}

// AgentsAfter lists up to limit agents of every user in (user_id,
// agent_id) order, starting just after after (the zero ref starts at the
// first).
func (m *Memories) AgentsAfter(ctx context.Context, after memory.AgentRef, limit int) ([]memory.AgentRef, error) {
	rows, err := m.db.Pool.Query(ctx, `SELECT user_id, agent_id FROM agents
		WHERE (user_id, agent_id) > ($1, $2) ORDER BY user_id, agent_id LIMIT $3`, after.UserID, after.AgentID, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: agents after: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.AgentRef, error) {
		var r memory.AgentRef
		return r, row.Scan(&r.UserID, &r.AgentID)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: agents after: %w", err)
	}
	return out, nil
}

// Usage is what the user stores, as the quotas count it.
func (m *Memories) Usage(ctx context.Context, userID string) (memory.Usage, error) {
	var u memory.Usage
	err := m.db.Pool.QueryRow(ctx, `SELECT count(*), COALESCE(sum(content_bytes), 0) FROM agents WHERE user_id = $1`, userID).
		Scan(&u.Agents, &u.TextBytes)
	if err != nil {
		return u, fmt.Errorf("postgres: usage: %w", err)
	}
	return u, nil
}

// StreamVersion is the version of the last event of the agent stream that
// the read model applied, or domain.ExpectNoStream when it applied none.
func (m *Memories) StreamVersion(ctx context.Context, stream string) (int64, error) {
	var v int64
	err := m.db.Pool.QueryRow(ctx, `SELECT version FROM agent_streams WHERE stream = $1`, stream).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ExpectNoStream, nil
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: stream version: %w", err)
	}
	return v, nil
}

// AgentIDs lists the identifiers of the user's agents, sorted.
func (m *Memories) AgentIDs(ctx context.Context, userID string) ([]string, error) {
	rows, err := m.db.Pool.Query(ctx, `SELECT agent_id FROM agents WHERE user_id = $1 ORDER BY agent_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("postgres: agent ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: agent ids: %w", err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

const memViewColumns = `m.id, m.agent_id, m.type, m.searchable, m.content, m.tags, m.derived_from, m.created_at, m.updated_at,
	m.forgotten_at, m.text_hash, m.embed_pending, m.version, a.embedding_model, a.dimensions,
	m.strength, m.strength_since, m.protected, m.goal_type, m.verification_count, m.last_verified_at, COALESCE(s.lazy_decay, TRUE), m.processed`

// memViewFrom joins each memory's agent and its settings (no row: the
// defaults, lazy decay on).
const memViewFrom = ` FROM memories m JOIN agents a ON a.user_id = m.user_id AND a.agent_id = m.agent_id
	LEFT JOIN agent_settings s ON s.user_id = m.user_id AND s.agent_id = m.agent_id `

// Memory returns one memory of the user, forgotten or not; (zero, false,
// nil) if it does not exist, was purged, or belongs to someone else.
func (m *Memories) Memory(ctx context.Context, userID, id string) (memory.View, bool, error) {
	views, err := m.views(ctx, `SELECT `+memViewColumns+memViewFrom+`WHERE m.id = $1 AND m.user_id = $2`, id, userID)
	if err != nil || len(views) == 0 {
		return memory.View{}, false, err
	}
	return views[0], true, nil
}

// MemoryOwner returns the user and agent a memory id belongs to, whoever
// they are; (_, _, false, nil) if no memory has the id.
func (m *Memories) MemoryOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error) {
	err = m.db.Pool.QueryRow(ctx, `SELECT user_id, agent_id FROM memories WHERE id = $1`, id).Scan(&userID, &agentID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("postgres: memory owner: %w", err)
	}
	return userID, agentID, true, nil
}

// OwnersOf returns the user and agent of each of ids that a memory has,
// whoever they are; other ids are left out.
func (m *Memories) OwnersOf(ctx context.Context, ids []string) (map[string]memory.AgentRef, error) {
	rows, err := m.db.Pool.Query(ctx, `SELECT id, user_id, agent_id FROM memories WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: memory owners: %w", err)
	}
	defer rows.Close()
	out := make(map[string]memory.AgentRef, len(ids))
	for rows.Next() {
		var id string
		var ref memory.AgentRef
		if err := rows.Scan(&id, &ref.UserID, &ref.AgentID); err != nil {
			return nil, fmt.Errorf("postgres: memory owners: %w", err)
		}
		out[id] = ref
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: memory owners: %w", err)
	}
	return out, nil
}

// MemoriesByID returns the memories among ids that belong to the user's
// agent and are not forgotten, keyed by id; other ids are absent.
func (m *Memories) MemoriesByID(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.View, error) {
	views, err := m.views(ctx, `SELECT `+memViewColumns+memViewFrom+
		`WHERE m.user_id = $1 AND m.agent_id = $2 AND m.id = ANY($3) AND m.forgotten_at IS NULL`, userID, agentID, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]memory.View, len(views))
	for _, v := range views {
		out[v.ID] = v
	}
	return out, nil
}

// ExcerptsByID returns what a search result shows of the memories among
// ids that belong to the user's agent and are not forgotten (unless
// includeForgotten), keyed by id; other ids are absent.
func (m *Memories) ExcerptsByID(ctx context.Context, userID, agentID string, ids []string, includeForgotten bool) (map[string]memory.Excerpt, error) {
	query := `SELECT m.id, m.type, m.content, m.tags, m.created_at, m.forgotten_at IS NOT NULL,
		m.strength, m.strength_since, m.protected, m.goal_type, COALESCE(s.lazy_decay, TRUE) FROM memories m
		LEFT JOIN agent_settings s ON s.user_id = m.user_id AND s.agent_id = m.agent_id
		WHERE m.user_id = $1 AND m.agent_id = $2 AND m.id = ANY($3)`
	if !includeForgotten {
		query += ` AND m.forgotten_at IS NULL`
	}
	rows, err := m.db.Pool.Query(ctx, query, userID, agentID, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: memory excerpts: %w", err)
	}
	defer rows.Close()
	out := make(map[string]memory.Excerpt, len(ids))
	for rows.Next() {
		e := memory.Excerpt{AgentID: agentID}
		var typ, content, tags, created, since string
		if err := rows.Scan(&e.ID, &typ, &content, &tags, &created, &e.Vitality.Forgotten,
			&e.Vitality.Base, &since, &e.Vitality.Protected, &e.Vitality.GoalType, &e.LazyDecay); err != nil {
			return nil, fmt.Errorf("postgres: scan memory excerpt: %w", err)
		}
		e.Type, e.Vitality.Type, e.Content = memory.Type(typ), memory.Type(typ), json.RawMessage(content)
		var err error
		if e.CreatedAt, err = parseMemTime(created); err != nil {
			return nil, err
		}
		if e.Vitality.Since, err = parseMemTime(since); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(tags), &e.Tags); err != nil {
			return nil, fmt.Errorf("postgres: memory %s tags: %w", e.ID, err)
		}
		out[e.ID] = e
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: memory excerpts: %w", err)
	}
	return out, nil
}

// ListMemories returns one page, newest first by (created_at, id). The
// cursor is the position of the last memory returned, in the SQLite
// store's format, so a page never repeats or skips memories that existed
// when the listing started.
func (m *Memories) ListMemories(ctx context.Context, q memory.ListQuery) (memory.Page, error) {
	limit := listLimit(q.Limit)
	var w where
	w.add("m.user_id = ?", q.UserID)
	if q.AgentID != "" {
		w.add("m.agent_id = ?", q.AgentID)
	}
	if len(q.Types) > 0 {
		w.add("m.type = ANY(?)", typeNames(q.Types))
	}
	if !q.IncludeForgotten {
		w.add("m.forgotten_at IS NULL")
	}
	if !q.IncludeWeak {
		// Not weak at q.Now (memory.WeakAt); with decay off a memory is
		// weak only below 0.5 as it stands. Forgotten ones pass: the
		// clause above decides them.
		w.add(`(m.forgotten_at IS NOT NULL OR m.weak_at IS NULL OR m.weak_at >= ?
			OR (NOT COALESCE(s.lazy_decay, TRUE) AND m.strength >= ?))`, memTime(q.Now), memory.FadingStrength)
	}
	if q.Processed != nil {
		w.add("m.processed = ?", *q.Processed)
	}
	if q.Cursor != "" {
		at, id, err := decodeListCursor(q.Cursor)
		if err != nil {
			return memory.Page{}, err
		}
		w.add("(m.created_at, m.id) < (?, ?)", at, id)
	}
	views, err := m.views(ctx, `SELECT `+memViewColumns+memViewFrom+`WHERE `+w.sql()+
		` ORDER BY m.created_at DESC, m.id DESC LIMIT `+strconv.Itoa(limit+1), w.args...)
	if err != nil {
		return memory.Page{}, err
	}
	page := memory.Page{Memories: views}
	if len(views) > limit {
		page.Memories = views[:limit]
		last := page.Memories[limit-1]
		page.NextCursor = encodeListCursor(memTime(last.CreatedAt), last.ID)
	}
	return page, nil
}

// where builds a conjunction whose clauses write each parameter as ?,
// numbered $1, $2… in order.
type where struct {
	clauses []string
	args    []any
}

func (w *where) add(clause string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		clause = strings.Replace(clause, "?", "$"+strconv.Itoa(len(w.args)), 1)
	}
	w.clauses = append(w.clauses, clause)
}

func (w *where) sql() string { return strings.Join(w.clauses, " AND ") }

// listLimit is a page size as the listings take it: the default when not
// given, at most memory.MaxListLimit.
func listLimit(limit int) int {
	if limit <= 0 {
		return memory.DefaultListLimit
	}
	return min(limit, memory.MaxListLimit)
}

func typeNames(types []memory.Type) []string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	return names
}

// The cursor is opaque to clients; inside it is "created_at|id", the
// stored time as the SQLite store's cursor holds it: a cursor stays valid
// whichever store wrote it.
func encodeListCursor(createdAt, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(createdAt + "|" + id))
}

func decodeListCursor(cursor string) (string, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", "", errInvalidCursor()
	}
	at, id, ok := strings.Cut(string(raw), "|")
	if !ok || id == "" {
		return "", "", errInvalidCursor()
	}
	if _, err := parseMemTime(at); err != nil {
		return "", "", errInvalidCursor()
	}
	return at, id, nil
}

func errInvalidCursor() error {
	return domain.Invalid("cursor", "cursor is not one this server returned; start again without it")
}

// ExistingRefs returns the type of each id among ids that is a memory of
// the user's agent (forgotten memories count: they still exist).
func (m *Memories) ExistingRefs(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.Type, error) {
	rows, err := m.db.Pool.Query(ctx, `SELECT id, type FROM memories WHERE user_id = $1 AND agent_id = $2 AND id = ANY($3)`, userID, agentID, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: existing refs: %w", err)
	}
	defer rows.Close()
	out := make(map[string]memory.Type, len(ids))
	for rows.Next() {
		var id, typ string
		if err := rows.Scan(&id, &typ); err != nil {
			return nil, fmt.Errorf("postgres: existing refs: %w", err)
		}
		out[id] = memory.Type(typ)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: existing refs: %w", err)
	}
	return out, nil
}

// PendingEmbeddings returns up to limit memories, of every user, whose
// current text has no vector in their agent's active model, in id order.
func (m *Memories) PendingEmbeddings(ctx context.Context, limit int) ([]memory.PendingEmbedding, error) {
	rows, err := m.db.Pool.Query(ctx, `SELECT m.user_id, m.agent_id, m.id, m.type, m.content, m.text_hash, a.embedding_model, a.dimensions
		`+memViewFrom+`WHERE m.embed_pending ORDER BY m.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending embeddings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.PendingEmbedding, error) {
		var p memory.PendingEmbedding
		var typ, content string
		err := row.Scan(&p.UserID, &p.AgentID, &p.MemoryID, &typ, &content, &p.TextHash, &p.Model, &p.Dimensions)
		p.Type, p.Content = memory.Type(typ), json.RawMessage(content)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: pending embeddings: %w", err)
	}
	return out, nil
}

// MemoryIDsAfter returns up to limit searchable, unforgotten memories of
// the agent with id > afterID, in id order; types nil means every
// searchable type.
func (m *Memories) MemoryIDsAfter(ctx context.Context, userID, agentID string, types []memory.Type, afterID string, limit int) ([]memory.View, error) {
	w := searchableFilter(userID, agentID, types)
	w.add("m.id > ?", afterID)
	return m.views(ctx, `SELECT `+memViewColumns+memViewFrom+`WHERE `+w.sql()+` ORDER BY m.id LIMIT `+strconv.Itoa(max(limit, 0)), w.args...)
}

// CountMemories counts what MemoryIDsAfter would page through.
func (m *Memories) CountMemories(ctx context.Context, userID, agentID string, types []memory.Type) (int, error) {
	w := searchableFilter(userID, agentID, types)
	var n int
	if err := m.db.Pool.QueryRow(ctx, `SELECT count(*) FROM memories m WHERE `+w.sql(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count memories: %w", err)
	}
	return n, nil
}

func searchableFilter(userID, agentID string, types []memory.Type) where {
	var w where
	w.add("m.user_id = ? AND m.agent_id = ? AND m.searchable AND m.forgotten_at IS NULL", userID, agentID)
	if len(types) > 0 {
		w.add("m.type = ANY(?)", typeNames(types))
	}
	return w
}

// views reads every row of a query over memViewColumns.
func (m *Memories) views(ctx context.Context, query string, args ...any) ([]memory.View, error) {
	rows, err := m.db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: memories: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanMemoryView)
	if err != nil {
		return nil, fmt.Errorf("postgres: memories: %w", err)
	}
	if out == nil {
		out = []memory.View{}
	}
	return out, nil
}

func scanMemoryView(row pgx.CollectableRow) (memory.View, error) {
	var v memory.View
	var typ, content, tags, refs, created, updated, since string
	var forgotten, verified *string
	var searchable, pending bool
	if err := row.Scan(&v.ID, &v.AgentID, &typ, &searchable, &content, &tags, &refs, &created, &updated,
		&forgotten, &v.TextHash, &pending, &v.Version, &v.Embedding.Model, &v.Embedding.Dimensions,
		&v.Vitality.Base, &since, &v.Vitality.Protected, &v.Vitality.GoalType, &v.VerificationCount, &verified, &v.LazyDecay, &v.Processed); err != nil {
		return v, err
	}
	v.Type, v.Vitality.Type, v.Content, v.Protected = memory.Type(typ), memory.Type(typ), json.RawMessage(content), v.Vitality.Protected
	if err := errors.Join(json.Unmarshal([]byte(tags), &v.Tags), json.Unmarshal([]byte(refs), &v.DerivedFrom)); err != nil {
		return v, fmt.Errorf("memory %s lists: %w", v.ID, err)
	}
	var err error
	if v.CreatedAt, err = parseMemTime(created); err != nil {
		return v, err
	}
	if v.UpdatedAt, err = parseMemTime(updated); err != nil {
		return v, err
	}
	if v.Vitality.Since, err = parseMemTime(since); err != nil {
		return v, err
	}
	if v.ForgottenAt, err = parseMemTimeOrNil(forgotten); err != nil {
		return v, err
	}
	if v.LastVerifiedAt, err = parseMemTimeOrNil(verified); err != nil {
		return v, err
	}
	v.Forgotten, v.Vitality.Forgotten = v.ForgottenAt != nil, v.ForgottenAt != nil
	switch {
	case !searchable || v.Forgotten:
		v.Embedding.Status = memory.StatusNotIndexed
	case pending:
		v.Embedding.Status = memory.StatusPending
	default:
		v.Embedding.Status = memory.StatusEmbedded
	}
	return v, nil
}

// Settings returns the agent's stack settings (the defaults when they
// never changed); found is false when the user has no such agent.
func (m *Memories) Settings(ctx context.Context, userID, agentID string) (agentsettings.View, bool, error) {
	var raw, updated *string
	err := m.db.Pool.QueryRow(ctx, `SELECT s.settings, s.updated_at FROM agents a
		LEFT JOIN agent_settings s ON s.user_id = a.user_id AND s.agent_id = a.agent_id
		WHERE a.user_id = $1 AND a.agent_id = $2`, userID, agentID).Scan(&raw, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return agentsettings.View{}, false, nil
	}
	if err != nil {
		return agentsettings.View{}, false, fmt.Errorf("postgres: settings: %w", err)
	}
	v := agentsettings.View{AgentID: agentID, Settings: agentsettings.Defaults()}
	if raw != nil {
		if err := json.Unmarshal([]byte(*raw), &v.Settings); err != nil {
			return v, false, fmt.Errorf("postgres: settings of %s: %w", agentID, err)
		}
		if v.UpdatedAt, err = parseMemTimeOrNil(updated); err != nil {
			return v, false, err
		}
	}
	return v, true, nil
}

// AgentStats counts the agent's memories (memory.Stats without
// Suggestions) with weakness judged at now; found is false when the user
// has no such agent.
func (m *Memories) AgentStats(ctx context.Context, userID, agentID string, now time.Time) (memory.Stats, bool, error) {
	st := memory.Stats{AgentID: agentID, ByType: map[memory.Type]int{}, ForgottenByType: map[memory.Type]int{}}
	for _, t := range memory.Types() {
		st.ByType[t], st.ForgottenByType[t] = 0, 0
	}
	if _, found, err := m.Settings(ctx, userID, agentID); err != nil || !found {
		return st, found, err
	}
	rows, err := m.db.Pool.Query(ctx, `SELECT m.type, count(*), count(*) FILTER (WHERE m.forgotten_at IS NOT NULL),
			count(*) FILTER (WHERE m.forgotten_at IS NULL AND m.weak_at IS NOT NULL AND m.weak_at < $1
				AND (COALESCE(s.lazy_decay, TRUE) OR m.strength < $2)),
			count(*) FILTER (WHERE m.type = 'raw_entry' AND m.forgotten_at IS NULL AND m.processed),
			count(*) FILTER (WHERE m.type = 'raw_entry' AND m.forgotten_at IS NULL AND NOT m.processed)
		FROM memories m LEFT JOIN agent_settings s ON s.user_id = m.user_id AND s.agent_id = m.agent_id
		WHERE m.user_id = $3 AND m.agent_id = $4 GROUP BY m.type`, memTime(now), memory.FadingStrength, userID, agentID)
	if err != nil {
		return st, false, fmt.Errorf("postgres: agent stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ string
		var n, forgotten, weak, processed, unprocessed int
		if err := rows.Scan(&typ, &n, &forgotten, &weak, &processed, &unprocessed); err != nil {
			return st, false, fmt.Errorf("postgres: agent stats: %w", err)
		}
		st.ByType[memory.Type(typ)], st.ForgottenByType[memory.Type(typ)] = n, forgotten
		st.Total += n
		st.Forgotten += forgotten
		st.Weak += weak
		st.Raw.Processed += processed
		st.Raw.Unprocessed += unprocessed
	}
	if err := rows.Err(); err != nil {
		return st, false, fmt.Errorf("postgres: agent stats: %w", err)
	}
	return st, true, nil
}
