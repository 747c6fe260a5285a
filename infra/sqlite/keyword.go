package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/textindex"
	"github.com/engram-memory/engram/projections/search"
)

// KeywordProjectionName keys the keyword index's checkpoint.
const KeywordProjectionName = "keyword"

// Keyword is the keyword index projection. SQLite holds every searchable,
// not forgotten memory's indexed text and searchable metadata
// (migrations/0005_keyword.sql, 0008_keyword_meta.sql); an
// in-process BM25 index, one collection per agent, is loaded from it at
// start and changed after each committed batch. It answers
// search.KeywordIndex.
type Keyword struct {
	db    *DB
	index *textindex.Index

	loadMu sync.Mutex
	loaded bool
}

var _ search.KeywordIndex = (*Keyword)(nil)

// NewKeyword returns the keyword projection over db with an empty index;
// Load (or the engine's first Position call) fills it.
func NewKeyword(db *DB) *Keyword { return &Keyword{db: db, index: textindex.New(textindex.Options{})} }

// Name implements projections.Projection.
func (k *Keyword) Name() string { return KeywordProjectionName }

// Position implements projections.Projection; the engine asks before it
// feeds events, so this is where the index is loaded.
func (k *Keyword) Position(ctx context.Context) (uint64, error) {
	if err := k.Load(ctx); err != nil {
		return 0, err
	}
	return k.db.Checkpoint(ctx, KeywordProjectionName)
}

// Reset implements projections.Projection.
func (k *Keyword) Reset(ctx context.Context) error {
	k.loadMu.Lock()
	defer k.loadMu.Unlock()
	if err := k.db.ResetProjection(ctx, KeywordProjectionName, "keyword_docs", "keyword_agents"); err != nil {
		return err
	}
	for _, c := range k.index.Collections("") {
		k.index.DropCollection(c)
	}
	k.loaded = true
	return nil
}

// Apply implements projections.Projection. Index changes are collected
// while the transaction runs and made after it commits.
func (k *Keyword) Apply(ctx context.Context, events []domain.Event) error {
	if err := k.Load(ctx); err != nil {
		return err
	}
	var ops []func()
	err := k.db.ApplyEvents(ctx, KeywordProjectionName, events, func(tx *sql.Tx, e domain.Event) error {
		return k.apply(ctx, tx, e, &ops)
	})
	if err != nil {
		return err
	}
	for _, op := range ops {
		op()
	}
	return nil
}

// SearchKeyword implements search.KeywordIndex.
func (k *Keyword) SearchKeyword(ctx context.Context, q search.KeywordQuery) ([]search.Hit, error) {
	f := textindex.Filter{Tags: q.Filter.Tags, CreatedAfter: q.Filter.CreatedAfter, CreatedBefore: q.Filter.CreatedBefore}
	for _, t := range q.Filter.Types {
		f.Types = append(f.Types, string(t))
	}
	hits, err := k.index.Search(ctx, keywordCollection(q.UserID, q.AgentID), q.Text, q.Limit, f)
	if err != nil {
		return nil, fmt.Errorf("keyword: search: %w", err)
	}
	out := make([]search.Hit, len(hits))
	for i, h := range hits {
		out[i] = search.Hit{ID: h.ID, Score: h.Score, CreatedAt: h.CreatedAt}
	}
	return out, nil
}

// Load fills the index from the store, once.
func (k *Keyword) Load(ctx context.Context) error {
	k.loadMu.Lock()
	defer k.loadMu.Unlock()
	if k.loaded {
		return nil
	}
	rows, err := k.db.read.QueryContext(ctx, `SELECT memory_id, user_id, agent_id, type, tags, created_ns, body, meta FROM keyword_docs ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("keyword: load: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d textindex.Doc
		var user, agent string
		var tags []byte
		var created int64
		if err := rows.Scan(&d.ID, &user, &agent, &d.Type, &tags, &created, &d.Text, &d.Meta); err != nil {
			return fmt.Errorf("keyword: load: %w", err)
		}
		if err := json.Unmarshal(tags, &d.Tags); err != nil {
			return fmt.Errorf("keyword: load %s tags: %w", d.ID, err)
		}
		d.CreatedAt = time.Unix(0, created).UTC()
		k.index.Upsert(keywordCollection(user, agent), d)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("keyword: load: %w", err)
	}
	k.loaded = true
	return nil
}

// keywordCollection names an agent's collection; user and agent ids hold
// no "/", so "user/" prefixes exactly that user's collections.
func keywordCollection(userID, agentID string) string { return userID + "/" + agentID }

func (k *Keyword) apply(ctx context.Context, tx *sql.Tx, e domain.Event, ops *[]func()) error {
	switch e.Type {
	case memory.AgentCreated{}.EventType():
		var p memory.AgentCreated
		if err := e.Decode(&p); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO keyword_agents (user_id, agent_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, p.UserID, p.AgentID)
		return err
	case memory.MemoryCreated{}.EventType():
		var p memory.MemoryCreated
		if err := e.Decode(&p); err != nil {
			return err
		}
		return k.created(ctx, tx, p, ops)
	case memory.MemoryUpdated{}.EventType():
		var p memory.MemoryUpdated
		if err := e.Decode(&p); err != nil {
			return err
		}
		return k.updated(ctx, tx, p, ops)
	case memory.MemoryPatched{}.EventType():
		var p memory.MemoryPatched
		if err := e.Decode(&p); err != nil {
			return err
		}
		return k.patched(ctx, tx, p, ops)
	case memory.MemoryForgotten{}.EventType():
		var p memory.MemoryForgotten
		if err := e.Decode(&p); err != nil {
			return err
		}
		// A forgotten memory is never searchable again, so it leaves the
		// index entirely; a later update of it finds nothing to re-index.
		return k.deleted(ctx, tx, p.AgentRef, p.MemoryID, ops)
	case memory.MemoryRecovered{}.EventType():
		var p memory.MemoryRecovered
		if err := e.Decode(&p); err != nil {
			return err
		}
		// Forgetting removed the document; the event carries the memory
		// as it stands, so it is indexed again as if created.
		return k.created(ctx, tx, memory.MemoryCreated{AgentRef: p.AgentRef, MemoryID: p.MemoryID, Type: p.Type,
			Content: p.Content, Tags: p.Tags, CreatedAt: p.CreatedAt, TextHash: p.TextHash}, ops)
	case memory.MemoryPurged{}.EventType():
		var p memory.MemoryPurged
		if err := e.Decode(&p); err != nil {
			return err
		}
		return k.deleted(ctx, tx, p.AgentRef, p.MemoryID, ops)
	case memory.AgentDeleted{}.EventType():
		var p memory.AgentDeleted
		if err := e.Decode(&p); err != nil {
			return err
		}
		for _, stmt := range []string{`DELETE FROM keyword_docs WHERE user_id = ? AND agent_id = ?`, `DELETE FROM keyword_agents WHERE user_id = ? AND agent_id = ?`} {
			if _, err := tx.ExecContext(ctx, stmt, p.UserID, p.AgentID); err != nil {
				return fmt.Errorf("keyword: delete agent: %w", err)
			}
		}
		coll := keywordCollection(p.UserID, p.AgentID)
		*ops = append(*ops, func() { k.index.DropCollection(coll) })
	}
	return nil
}

func (k *Keyword) created(ctx context.Context, tx *sql.Tx, p memory.MemoryCreated, ops *[]func()) error {
	if !p.Type.Searchable() {
		return nil
	}
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM keyword_agents WHERE user_id = ? AND agent_id = ?`, p.UserID, p.AgentID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // memory events of an agent deleted earlier are ignored
	}
	if err != nil {
		return fmt.Errorf("keyword: agent: %w", err)
	}
	text, err := memory.IndexedText(p.Type, p.Content)
	if err != nil {
		return err
	}
	meta, err := memory.IndexedMetadata(p.Type, p.Content, p.Tags)
	if err != nil {
		return err
	}
	tags, err := json.Marshal(nonNil(p.Tags))
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO keyword_docs (memory_id, user_id, agent_id, type, tags, created_ns, body, meta, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (memory_id) DO NOTHING`,
		p.MemoryID, p.UserID, p.AgentID, string(p.Type), tags, keywordNanos(p.CreatedAt), text, meta, string(p.Content))
	if err != nil {
		return fmt.Errorf("keyword: insert: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // a duplicate create changes nothing, as in the read model
	}
	doc := textindex.Doc{ID: p.MemoryID, Text: text, Meta: meta, Type: string(p.Type), Tags: p.Tags, CreatedAt: p.CreatedAt}
	coll := keywordCollection(p.UserID, p.AgentID)
	*ops = append(*ops, func() { k.index.Upsert(coll, doc) })
	return nil
}

func (k *Keyword) updated(ctx context.Context, tx *sql.Tx, p memory.MemoryUpdated, ops *[]func()) error {
	return k.change(ctx, tx, p.AgentRef, p.MemoryID, func(memory.Type, json.RawMessage, []string) (json.RawMessage, []string, error) {
		return p.Content, p.Tags, nil
	}, ops)
}

// patched applies a patch's changed fields to the stored content, as the
// memories read model does.
func (k *Keyword) patched(ctx context.Context, tx *sql.Tx, p memory.MemoryPatched, ops *[]func()) error {
	return k.change(ctx, tx, p.AgentRef, p.MemoryID, func(t memory.Type, stored json.RawMessage, tags []string) (json.RawMessage, []string, error) {
		if p.Tags != nil {
			tags = *p.Tags
		}
		if p.Content == nil {
			return stored, tags, nil
		}
		content, err := memory.ApplyContentChanges(t, stored, p.Content)
		return content, tags, err
	}, ops)
}

// change re-indexes an indexed memory with the content and tags that
// change computes from its stored ones.
func (k *Keyword) change(ctx context.Context, tx *sql.Tx, ref memory.AgentRef, id string,
	change func(t memory.Type, content json.RawMessage, tags []string) (json.RawMessage, []string, error), ops *[]func()) error {
	var typ string
	var created int64
	var content, storedTags []byte
	err := tx.QueryRowContext(ctx, `SELECT type, created_ns, content, tags FROM keyword_docs WHERE memory_id = ? AND user_id = ? AND agent_id = ?`,
		id, ref.UserID, ref.AgentID).Scan(&typ, &created, &content, &storedTags)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // not indexed: a drive, forgotten or purged before
	}
	if err != nil {
		return fmt.Errorf("keyword: find: %w", err)
	}
	var oldTags []string
	if err := json.Unmarshal(storedTags, &oldTags); err != nil {
		return fmt.Errorf("keyword: %s tags: %w", id, err)
	}
	newContent, newTags, err := change(memory.Type(typ), content, oldTags)
	if err != nil {
		return err
	}
	text, err := memory.IndexedText(memory.Type(typ), newContent)
	if err != nil {
		return err
	}
	meta, err := memory.IndexedMetadata(memory.Type(typ), newContent, newTags)
	if err != nil {
		return err
	}
	tags, err := json.Marshal(nonNil(newTags))
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE keyword_docs SET body = ?, meta = ?, tags = ?, content = ? WHERE memory_id = ?`, text, meta, tags, string(newContent), id); err != nil {
		return fmt.Errorf("keyword: update: %w", err)
	}
	doc := textindex.Doc{ID: id, Text: text, Meta: meta, Type: typ, Tags: newTags, CreatedAt: time.Unix(0, created).UTC()}
	coll := keywordCollection(ref.UserID, ref.AgentID)
	*ops = append(*ops, func() { k.index.Upsert(coll, doc) })
	return nil
}

func (k *Keyword) deleted(ctx context.Context, tx *sql.Tx, ref memory.AgentRef, memoryID string, ops *[]func()) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM keyword_docs WHERE memory_id = ? AND user_id = ? AND agent_id = ?`, memoryID, ref.UserID, ref.AgentID)
	if err != nil {
		return fmt.Errorf("keyword: delete: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		coll := keywordCollection(ref.UserID, ref.AgentID)
		*ops = append(*ops, func() { k.index.Delete(coll, memoryID) })
	}
	return nil
}

func nonNil(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}

// keywordNanos stores a time as int64 nanoseconds, clamping times outside
// the years 1678-2262 (the same convention as the in-process indexes).
func keywordNanos(t time.Time) int64 {
	const edgeSec = math.MaxInt64/1_000_000_000 - 1
	switch sec := t.Unix(); {
	case sec < -edgeSec:
		return math.MinInt64 + 1
	case sec > edgeSec:
		return math.MaxInt64
	}
	return t.UnixNano()
}
