package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
)

// Every query below is scoped by user: another user's agent or memory is
// indistinguishable from a missing one.

// memAgentColumns are an agent's columns as scanMemAgents reads them. Its
// memory count is kept on the row (stored minus forgotten) rather than
// counted, because every write reads the agent.
const memAgentColumns = `a.user_id, a.agent_id, a.embedding_model, a.dimensions, a.created_at,
	a.stored_memories - a.forgotten_memories, a.stored_memories, a.content_bytes`

// Agent returns one agent of the user; (zero, false, nil) if there is none.
func (m *Memories) Agent(ctx context.Context, userID, agentID string) (memory.AgentView, bool, error) {
	rows, err := m.db.read.QueryContext(ctx, `SELECT `+memAgentColumns+` FROM agents a WHERE a.user_id = ? AND a.agent_id = ?`, userID, agentID)
	if err != nil {
		return memory.AgentView{}, false, fmt.Errorf("sqlite: agent: %w", err)
	}
	agents, err := scanMemAgents(rows)
	if err != nil || len(agents) == 0 {
		return memory.AgentView{}, false, err
	}
	return agents[0], true, nil
}

// ListAgents returns one page of the user's agents in agent_id order.
// MemoryCount counts the memories that are not forgotten. The cursor is the
// last agent_id returned, so agents created or deleted meanwhile never
// make a page repeat or skip one that exists throughout.
func (m *Memories) ListAgents(ctx context.Context, q memory.AgentListQuery) (memory.AgentPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = memory.DefaultListLimit
	}
	limit = min(limit, memory.MaxListLimit)
	after := ""
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || memory.ValidateAgentID(string(raw)) != nil {
			return memory.AgentPage{}, domain.Invalid("cursor", "cursor is not one this server returned; start again without it")
		}
		after = string(raw)
	}
	rows, err := m.db.read.QueryContext(ctx, `SELECT `+memAgentColumns+` FROM agents a WHERE a.user_id = ? AND a.agent_id > ?
		ORDER BY a.agent_id LIMIT ?`, q.UserID, after, limit+1)
	if err != nil {
		return memory.AgentPage{}, fmt.Errorf("sqlite: agents: %w", err)
	}
	agents, err := scanMemAgents(rows)
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

// AgentsAfter lists up to limit agents of every user in (user_id,
// agent_id) order, starting just after after (the zero ref starts at the
// first): background work that visits every agent (the processing
// scheduler) pages through them with it.
func (m *Memories) AgentsAfter(ctx context.Context, after memory.AgentRef, limit int) ([]memory.AgentRef, error) {
	rows, err := m.db.read.QueryContext(ctx, `SELECT user_id, agent_id FROM agents
		WHERE user_id > ? OR (user_id = ? AND agent_id > ?) ORDER BY user_id, agent_id LIMIT ?`, after.UserID, after.UserID, after.AgentID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: agents after: %w", err)
	}
	defer rows.Close()
	var out []memory.AgentRef
	for rows.Next() {
		var r memory.AgentRef
		if err := rows.Scan(&r.UserID, &r.AgentID); err != nil {
			return nil, fmt.Errorf("sqlite: agents after: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: agents after: %w", err)
	}
	return out, nil
}

// Usage is what the user stores, as the quotas count it.
func (m *Memories) Usage(ctx context.Context, userID string) (memory.Usage, error) {
	var u memory.Usage
	err := m.db.read.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(content_bytes), 0) FROM agents WHERE user_id = ?`, userID).
		Scan(&u.Agents, &u.TextBytes)
	if err != nil {
		return u, fmt.Errorf("sqlite: usage: %w", err)
	}
	return u, nil
}

// StreamVersion is the version of the last event of the agent stream that
// the read model applied, or domain.ExpectNoStream when it applied none:
// the expected version of an append that decides on what this read model
// shows.
func (m *Memories) StreamVersion(ctx context.Context, stream string) (int64, error) {
	var v int64
	err := m.db.read.QueryRowContext(ctx, `SELECT version FROM agent_streams WHERE stream = ?`, stream).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.ExpectNoStream, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: stream version: %w", err)
	}
	return v, nil
}

// AgentIDs lists the identifiers of the user's agents, sorted.
func (m *Memories) AgentIDs(ctx context.Context, userID string) ([]string, error) {
	rows, err := m.db.read.QueryContext(ctx, `SELECT agent_id FROM agents WHERE user_id = ? ORDER BY agent_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: agent ids: %w", err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: agent ids: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func scanMemAgents(rows *sql.Rows) ([]memory.AgentView, error) {
	defer rows.Close()
	out := []memory.AgentView{}
	for rows.Next() {
		var a memory.AgentView
		var created string
		if err := rows.Scan(&a.UserID, &a.AgentID, &a.EmbeddingModel, &a.Dimensions, &created, &a.MemoryCount, &a.StoredMemories, &a.TextBytes); err != nil {
			return nil, fmt.Errorf("sqlite: scan agent: %w", err)
		}
		t, err := parseMemTime(created)
		if err != nil {
			return nil, err
		}
		a.CreatedAt = t
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: agents: %w", err)
	}
	return out, nil
}

const memViewColumns = `m.id, m.agent_id, m.type, m.searchable, m.content, m.tags, m.derived_from, m.created_at, m.updated_at,
	m.forgotten_at, m.text_hash, m.embed_pending, m.version, a.embedding_model, a.dimensions,
	m.strength, m.strength_since, m.protected, m.goal_type, m.verification_count, m.last_verified_at, COALESCE(s.lazy_decay, 1), m.processed`

// memViewFrom joins each memory's agent and its settings (no row: the
// defaults, lazy decay on).
const memViewFrom = ` FROM memories m JOIN agents a ON a.user_id = m.user_id AND a.agent_id = m.agent_id
	LEFT JOIN agent_settings s ON s.user_id = m.user_id AND s.agent_id = m.agent_id `

// Memory returns one memory of the user, forgotten or not; (zero, false,
// nil) if it does not exist, was purged, or belongs to someone else.
func (m *Memories) Memory(ctx context.Context, userID, id string) (memory.View, bool, error) {
	views, err := m.queryViews(ctx, `SELECT `+memViewColumns+memViewFrom+`WHERE m.id = ? AND m.user_id = ?`, id, userID)
	if err != nil || len(views) == 0 {
		return memory.View{}, false, err
	}
	return views[0], true, nil
}

// MemoryOwner returns the user and agent a memory id belongs to, whoever
// they are; (_, _, false, nil) if no memory has the id. Sync uses it to
// refuse a pushed memory whose id is taken: ids are global.
func (m *Memories) MemoryOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error) {
	err = m.db.read.QueryRowContext(ctx, `SELECT user_id, agent_id FROM memories WHERE id = ?`, id).Scan(&userID, &agentID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("sqlite: memory owner: %w", err)
	}
	return userID, agentID, true, nil
}

// OwnersOf returns the user and agent of each of ids that a memory has,
// whoever they are; other ids are left out. An import asks for all its
// memory ids at once rather than one query per id.
func (m *Memories) OwnersOf(ctx context.Context, ids []string) (map[string]memory.AgentRef, error) {
	out := make(map[string]memory.AgentRef, len(ids))
	for start := 0; start < len(ids); start += memIDChunk {
		chunk := ids[start:min(start+memIDChunk, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := m.db.read.QueryContext(ctx, `SELECT id, user_id, agent_id FROM memories WHERE id IN (`+memPlaceholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: memory owners: %w", err)
		}
		for rows.Next() {
			var id string
			var ref memory.AgentRef
			if err := rows.Scan(&id, &ref.UserID, &ref.AgentID); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: memory owners: %w", err)
			}
			out[id] = ref
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: memory owners: %w", err)
		}
	}
	return out, nil
}

// memIDChunk bounds the bound parameters of one IN (...) query.
const memIDChunk = 500

// MemoriesByID returns the memories among ids that belong to the user's
// agent and are not forgotten, keyed by id; missing, purged, forgotten and
// foreign ids are simply absent. Search uses it to hydrate hits, and
// forgotten memories never appear in search.
func (m *Memories) MemoriesByID(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.View, error) {
	out := make(map[string]memory.View, len(ids))
	for start := 0; start < len(ids); start += memIDChunk {
		chunk := ids[start:min(start+memIDChunk, len(ids))]
		// The statement is prepared once per size class (memIDSizes).
		size := memIDSize(len(chunk))
		views, err := m.scanViews(m.db.queryHot(ctx, memIDQueries().byID[size], memIDArgs(userID, agentID, chunk, size)...))
		if err != nil {
			return nil, err
		}
		for _, v := range views {
			out[v.ID] = v
		}
	}
	return out, nil
}

// ExcerptsByID returns what a search result shows of the memories among
// ids that belong to the user's agent and are not forgotten (unless
// includeForgotten), keyed by id, with what their strength is computed
// from;
// like MemoriesByID, other ids are absent. Search hydrates its final page
// with it (one prepared query per page).
func (m *Memories) ExcerptsByID(ctx context.Context, userID, agentID string, ids []string, includeForgotten bool) (map[string]memory.Excerpt, error) {
	out := make(map[string]memory.Excerpt, len(ids))
	for start := 0; start < len(ids); start += memIDChunk {
		chunk := ids[start:min(start+memIDChunk, len(ids))]
		size := memIDSize(len(chunk))
		queries := memIDQueries().excerpts
		if includeForgotten {
			queries = memIDQueries().withForgotten
		}
		rows, err := m.db.queryHot(ctx, queries[size], memIDArgs(userID, agentID, chunk, size)...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: memory excerpts: %w", err)
		}
		err = scanExcerpts(rows, agentID, out)
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanExcerpts(rows *sql.Rows, agentID string, out map[string]memory.Excerpt) error {
	for rows.Next() {
		e := memory.Excerpt{AgentID: agentID}
		var typ, created, since string
		var content, tags []byte // Scan copies into fresh slices
		if err := rows.Scan(&e.ID, &typ, &content, &tags, &created, &e.Vitality.Forgotten,
			&e.Vitality.Base, &since, &e.Vitality.Protected, &e.Vitality.GoalType, &e.LazyDecay); err != nil {
			return fmt.Errorf("sqlite: scan memory excerpt: %w", err)
		}
		e.Type, e.Content = memory.Type(typ), json.RawMessage(content)
		e.Vitality.Type = e.Type
		if err := unmarshalMemList(tags, &e.Tags); err != nil {
			return fmt.Errorf("sqlite: memory %s tags: %w", e.ID, err)
		}
		var err error
		if e.CreatedAt, err = parseMemTime(created); err != nil {
			return err
		}
		if e.Vitality.Since, err = parseMemTime(since); err != nil {
			return err
		}
		out[e.ID] = e
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: memory excerpts: %w", err)
	}
	return nil
}

// unmarshalMemList decodes a stored string list (memJSONList); "[]", the
// common case, decodes to an empty list without a JSON pass.
func unmarshalMemList(raw []byte, v *[]string) error {
	if string(raw) == "[]" {
		*v = []string{}
		return nil
	}
	return json.Unmarshal(raw, v)
}

// memIDArgs is the arguments of a by-id query of size placeholders: the
// ids padded with the last one (IN is a set, so a repeat changes nothing).
func memIDArgs(userID, agentID string, ids []string, size int) []any {
	args := make([]any, 2, 2+size)
	args[0], args[1] = userID, agentID
	for _, id := range ids {
		args = append(args, id)
	}
	for len(args) < 2+size {
		args = append(args, ids[len(ids)-1])
	}
	return args
}

// memIDSizes are the id list sizes the by-id queries are prepared for.
var memIDSizes = []int{1, 2, 4, 8, 10, 12, 16, 24, 32, 48, 64, 100, 128, 256, memIDChunk}

// memIDSize is the smallest size in memIDSizes that holds n ids.
func memIDSize(n int) int {
	for _, s := range memIDSizes {
		if s >= n {
			return s
		}
	}
	return memIDChunk
}

// memIDQueryTexts are the query texts of MemoriesByID (byID) and
// ExcerptsByID (excerpts, withForgotten: without and with forgotten
// memories) per size in memIDSizes.
type memIDQueryTexts struct {
	byID, excerpts, withForgotten map[int]string
}

// memIDQueries builds them at the first read by ids rather than at every
// engram process's start.
var memIDQueries = sync.OnceValue(func() memIDQueryTexts {
	q := memIDQueryTexts{make(map[int]string, len(memIDSizes)), make(map[int]string, len(memIDSizes)), make(map[int]string, len(memIDSizes))}
	const excerpt = `SELECT m.id, m.type, m.content, m.tags, m.created_at, m.forgotten_at IS NOT NULL,
		m.strength, m.strength_since, m.protected, m.goal_type, COALESCE(s.lazy_decay, 1) FROM memories m
		LEFT JOIN agent_settings s ON s.user_id = m.user_id AND s.agent_id = m.agent_id `
	for _, n := range memIDSizes {
		agentIDs := `WHERE m.user_id = ? AND m.agent_id = ? AND m.id IN (` + memPlaceholders(n) + `)`
		q.byID[n] = `SELECT ` + memViewColumns + memViewFrom + agentIDs + ` AND m.forgotten_at IS NULL`
		q.excerpts[n] = excerpt + agentIDs + ` AND m.forgotten_at IS NULL`
		q.withForgotten[n] = excerpt + agentIDs
	}
	return q
})

// ListMemories returns one page, newest first by (created_at, id). The
// cursor is the position of the last memory returned, so a page never
// repeats or skips memories that existed when the listing started,
// whatever is inserted meanwhile.
func (m *Memories) ListMemories(ctx context.Context, q memory.ListQuery) (memory.Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = memory.DefaultListLimit
	}
	limit = min(limit, memory.MaxListLimit)
	where := []string{"m.user_id = ?"}
	args := []any{q.UserID}
	if q.AgentID != "" {
		where, args = append(where, "m.agent_id = ?"), append(args, q.AgentID)
	}
	if len(q.Types) > 0 {
		where = append(where, "m.type IN ("+memPlaceholders(len(q.Types))+")")
		for _, t := range q.Types {
			args = append(args, string(t))
		}
	}
	if !q.IncludeForgotten {
		where = append(where, "m.forgotten_at IS NULL")
	}
	if !q.IncludeWeak {
		// Not weak at q.Now (memory.WeakAt); with decay off a memory is
		// weak only below 0.5 as it stands. Forgotten ones pass: the
		// clause above decides them.
		where, args = append(where, `(m.forgotten_at IS NOT NULL OR m.weak_at IS NULL OR m.weak_at >= ?
			OR (COALESCE(s.lazy_decay, 1) = 0 AND m.strength >= ?))`), append(args, memTime(q.Now), memory.FadingStrength)
	}
	if q.Processed != nil {
		where, args = append(where, "m.processed = ?"), append(args, *q.Processed)
	}
	if q.Cursor != "" {
		at, id, err := decodeListCursor(q.Cursor)
		if err != nil {
			return memory.Page{}, err
		}
		where, args = append(where, "(m.created_at, m.id) < (?, ?)"), append(args, at, id)
	}
	args = append(args, limit+1)
	views, err := m.queryViews(ctx, `SELECT `+memViewColumns+memViewFrom+`WHERE `+strings.Join(where, " AND ")+
		` ORDER BY m.created_at DESC, m.id DESC LIMIT ?`, args...)
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

// The cursor is opaque to clients; inside it is "created_at|id".
func encodeListCursor(createdAt, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(createdAt + "|" + id))
}

func decodeListCursor(cursor string) (string, string, error) {
	invalid := domain.Invalid("cursor", "cursor is not one this server returned; start again without it")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", "", invalid
	}
	at, id, ok := strings.Cut(string(raw), "|")
	if !ok || id == "" {
		return "", "", invalid
	}
	if _, err := parseMemTime(at); err != nil {
		return "", "", invalid
	}
	return at, id, nil
}

// ExistingRefs returns the type of each id among ids that is a memory of
// the user's agent (forgotten memories count: they still exist).
func (m *Memories) ExistingRefs(ctx context.Context, userID, agentID string, ids []string) (map[string]memory.Type, error) {
	out := make(map[string]memory.Type, len(ids))
	for start := 0; start < len(ids); start += memIDChunk {
		chunk := ids[start:min(start+memIDChunk, len(ids))]
		args := []any{userID, agentID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := m.db.read.QueryContext(ctx, `SELECT id, type FROM memories WHERE user_id = ? AND agent_id = ? AND id IN (`+memPlaceholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: existing refs: %w", err)
		}
		for rows.Next() {
			var id, typ string
			if err := rows.Scan(&id, &typ); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: existing refs: %w", err)
			}
			out[id] = memory.Type(typ)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("sqlite: existing refs: %w", err)
		}
	}
	return out, nil
}

// PendingEmbeddings returns up to limit memories, of every user, whose
// current text has no vector in their agent's active model, in id order.
func (m *Memories) PendingEmbeddings(ctx context.Context, limit int) ([]memory.PendingEmbedding, error) {
	rows, err := m.db.read.QueryContext(ctx, `SELECT m.user_id, m.agent_id, m.id, m.type, m.content, m.text_hash, a.embedding_model, a.dimensions
		`+memViewFrom+`WHERE m.embed_pending = 1 ORDER BY m.id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending embeddings: %w", err)
	}
	defer rows.Close()
	var out []memory.PendingEmbedding
	for rows.Next() {
		var p memory.PendingEmbedding
		var typ, content string
		if err := rows.Scan(&p.UserID, &p.AgentID, &p.MemoryID, &typ, &content, &p.TextHash, &p.Model, &p.Dimensions); err != nil {
			return nil, fmt.Errorf("sqlite: pending embeddings: %w", err)
		}
		p.Type, p.Content = memory.Type(typ), json.RawMessage(content)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: pending embeddings: %w", err)
	}
	return out, nil
}

// MemoryIDsAfter returns up to limit searchable, unforgotten memories of
// the agent with id > afterID, in id order; types nil means every
// searchable type. Re-embedding jobs page through an agent with it.
func (m *Memories) MemoryIDsAfter(ctx context.Context, userID, agentID string, types []memory.Type, afterID string, limit int) ([]memory.View, error) {
	where, args := memSearchableFilter(userID, agentID, types)
	args = append(args, afterID, limit)
	return m.queryViews(ctx, `SELECT `+memViewColumns+memViewFrom+`WHERE `+where+` AND m.id > ? ORDER BY m.id LIMIT ?`, args...)
}

// CountMemories counts what MemoryIDsAfter would page through.
func (m *Memories) CountMemories(ctx context.Context, userID, agentID string, types []memory.Type) (int, error) {
	where, args := memSearchableFilter(userID, agentID, types)
	var n int
	if err := m.db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM memories m WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count memories: %w", err)
	}
	return n, nil
}

func memSearchableFilter(userID, agentID string, types []memory.Type) (string, []any) {
	where := "m.user_id = ? AND m.agent_id = ? AND m.searchable = 1 AND m.forgotten_at IS NULL"
	args := []any{userID, agentID}
	if len(types) > 0 {
		where += " AND m.type IN (" + memPlaceholders(len(types)) + ")"
		for _, t := range types {
			args = append(args, string(t))
		}
	}
	return where, args
}

// queryViews runs a query over memViewColumns kept prepared: the memory by
// id, and the list's and the re-embedding's pages, whose filters make a
// bounded set of texts.
func (m *Memories) queryViews(ctx context.Context, query string, args ...any) ([]memory.View, error) {
	return m.scanViews(m.db.queryHot(ctx, query, args...))
}

// scanViews reads every row of a query over memViewColumns.
func (m *Memories) scanViews(rows *sql.Rows, err error) ([]memory.View, error) {
	if err != nil {
		return nil, fmt.Errorf("sqlite: memories: %w", err)
	}
	defer rows.Close()
	out := []memory.View{}
	for rows.Next() {
		v, err := scanMemoryView(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: memories: %w", err)
	}
	return out, nil
}

func scanMemoryView(rows *sql.Rows) (memory.View, error) {
	var v memory.View
	var typ, content, tags, refs, created, updated string
	var forgotten, verified sql.NullString
	var searchable, pending bool
	var since string
	if err := rows.Scan(&v.ID, &v.AgentID, &typ, &searchable, &content, &tags, &refs, &created, &updated,
		&forgotten, &v.TextHash, &pending, &v.Version, &v.Embedding.Model, &v.Embedding.Dimensions,
		&v.Vitality.Base, &since, &v.Vitality.Protected, &v.Vitality.GoalType, &v.VerificationCount, &verified, &v.LazyDecay, &v.Processed); err != nil {
		return v, fmt.Errorf("sqlite: scan memory: %w", err)
	}
	v.Vitality.Type, v.Protected = memory.Type(typ), v.Vitality.Protected
	v.Type, v.Content = memory.Type(typ), json.RawMessage(content)
	if err := errors.Join(json.Unmarshal([]byte(tags), &v.Tags), json.Unmarshal([]byte(refs), &v.DerivedFrom)); err != nil {
		return v, fmt.Errorf("sqlite: memory %s lists: %w", v.ID, err)
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
	if forgotten.Valid {
		t, err := parseMemTime(forgotten.String)
		if err != nil {
			return v, err
		}
		v.Forgotten, v.ForgottenAt = true, &t
		v.Vitality.Forgotten = true
	}
	if verified.Valid {
		t, err := parseMemTime(verified.String)
		if err != nil {
			return v, err
		}
		v.LastVerifiedAt = &t
	}
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

func memPlaceholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// Settings returns the agent's stack settings (the defaults when they
// never changed); found is false when the user has no such agent.
func (m *Memories) Settings(ctx context.Context, userID, agentID string) (agentsettings.View, bool, error) {
	var raw, updated sql.NullString
	err := m.db.read.QueryRowContext(ctx, `SELECT s.settings, s.updated_at FROM agents a
		LEFT JOIN agent_settings s ON s.user_id = a.user_id AND s.agent_id = a.agent_id
		WHERE a.user_id = ? AND a.agent_id = ?`, userID, agentID).Scan(&raw, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return agentsettings.View{}, false, nil
	}
	if err != nil {
		return agentsettings.View{}, false, fmt.Errorf("sqlite: settings: %w", err)
	}
	v := agentsettings.View{AgentID: agentID, Settings: agentsettings.Defaults()}
	if raw.Valid {
		if err := json.Unmarshal([]byte(raw.String), &v.Settings); err != nil {
			return v, false, fmt.Errorf("sqlite: settings of %s: %w", agentID, err)
		}
		t, err := parseMemTime(updated.String)
		if err != nil {
			return v, false, err
		}
		v.UpdatedAt = &t
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
	rows, err := m.db.read.QueryContext(ctx, `SELECT m.type, COUNT(*), COALESCE(SUM(m.forgotten_at IS NOT NULL), 0),
			COALESCE(SUM(m.forgotten_at IS NULL AND m.weak_at IS NOT NULL AND m.weak_at < ?
				AND (COALESCE(s.lazy_decay, 1) = 1 OR m.strength < ?)), 0),
			COALESCE(SUM(m.type = 'raw_entry' AND m.forgotten_at IS NULL AND m.processed = 1), 0),
			COALESCE(SUM(m.type = 'raw_entry' AND m.forgotten_at IS NULL AND m.processed = 0), 0)
		FROM memories m LEFT JOIN agent_settings s ON s.user_id = m.user_id AND s.agent_id = m.agent_id
		WHERE m.user_id = ? AND m.agent_id = ? GROUP BY m.type`, memTime(now), memory.FadingStrength, userID, agentID)
	if err != nil {
		return st, false, fmt.Errorf("sqlite: agent stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ string
		var n, forgotten, weak, processed, unprocessed int
		if err := rows.Scan(&typ, &n, &forgotten, &weak, &processed, &unprocessed); err != nil {
			return st, false, fmt.Errorf("sqlite: agent stats: %w", err)
		}
		st.ByType[memory.Type(typ)], st.ForgottenByType[memory.Type(typ)] = n, forgotten
		st.Total += n
		st.Forgotten += forgotten
		st.Weak += weak
		st.Raw.Processed += processed
		st.Raw.Unprocessed += unprocessed
	}
	if err := rows.Err(); err != nil {
		return st, false, fmt.Errorf("sqlite: agent stats: %w", err)
	}
	return st, true, nil
}
