package commands

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// IfMatch is a request's If-Match precondition: the entity tags (quoted,
// as memory.View.ETag gives them) of which the memory must have one. nil
// accepts any version ("*" or no header).
type IfMatch []string

// check fails with precondition_failed unless v has one of the tags.
func (im IfMatch) check(v memory.View) error {
	if im == nil || slices.Contains(im, v.ETag()) {
		return nil
	}
	return domain.Errorf(domain.KindPreconditionFailed,
		"memory %s is at version %d (ETag %s), not one If-Match names: read it again and decide anew", v.ID, v.Version, v.ETag()).
		WithDetail("etag", v.ETag())
}

// MemoryPatch changes a memory. Content is merged into the stored content
// field by field (top-level keys replace, a null removes the field so its
// default applies again), then validated as a whole; Tags replaces the tag
// list. A nil field is left alone. IfMatch makes the patch conditional on
// the memory's version.
type MemoryPatch struct {
	Content json.RawMessage
	Tags    *[]string
	IfMatch IfMatch
}

// patchResult is a patch decided against one state of the memory.
type patchResult struct {
	content json.RawMessage
	changes map[string]json.RawMessage // nil: content unchanged
	tags    *[]string                  // nil: tags unchanged
	text    string
	hash    string
}

// decidePatch applies the requested changes (already validated: changes
// parsed, tags normalized) to the memory as v shows it.
func decidePatch(v memory.View, changes map[string]json.RawMessage, tags *[]string) (patchResult, error) {
	r := patchResult{content: v.Content}
	if changes != nil {
		var err error
		if r.content, err = memory.ApplyContentChanges(v.Type, v.Content, changes); err != nil {
			return r, err
		}
		if r.changes, err = memory.ContentChanges(v.Content, r.content); err != nil {
			return r, err
		}
	}
	if tags != nil && !slices.Equal(*tags, v.Tags) {
		r.tags = tags
	}
	text, err := memory.IndexedText(v.Type, r.content)
	r.text, r.hash = text, memory.TextHash(text)
	return r, err
}

// Patch applies p to the user's memory and returns it as stored. It
// records only the fields that change (memory.MemoryPatched), decided at
// the agent stream's version, so concurrent patches of different fields
// all take effect. When the indexed text changes it is embedded again, in
// the same append; a patch of tags alone never calls the provider.
func (m *Memories) Patch(ctx context.Context, meta domain.Metadata, id string, p MemoryPatch) (memory.View, error) {
	userID, err := userOf(meta)
	if err != nil {
		return memory.View{}, err
	}
	if p.Content == nil && p.Tags == nil {
		return memory.View{}, domain.Invalid("", "nothing to change: send content and/or tags")
	}
	var changes map[string]json.RawMessage
	if p.Content != nil {
		if changes, err = memory.ParseContentPatch(p.Content); err != nil {
			return memory.View{}, err
		}
	}
	var tags *[]string
	if p.Tags != nil {
		normalized, err := memory.NormalizeTags("tags", *p.Tags)
		if err != nil {
			return memory.View{}, err
		}
		tags = &normalized
	}
	v, err := m.get(ctx, userID, id)
	if err != nil {
		return memory.View{}, err
	}
	if err := p.IfMatch.check(v); err != nil {
		return memory.View{}, err
	}
	// Validate, and embed the new text, before taking the user's lock: the
	// decision below finds the same text unless a concurrent patch changed
	// it, and only then embeds again.
	first, err := decidePatch(v, changes, tags)
	if err != nil {
		return memory.View{}, err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: v.AgentID}
	embedded := map[string]*memory.MemoryEmbedded{}
	embedFor := func(cur memory.View, r patchResult) (*memory.MemoryEmbedded, error) {
		key := r.hash + "\x00" + cur.Embedding.Model + "\x00" + strconv.Itoa(cur.Embedding.Dimensions)
		if e, done := embedded[key]; done {
			return e, nil
		}
		e, err := m.embedOne(ctx, ref, id, r.text, r.hash)
		embedded[key] = e
		return e, err
	}
	if first.hash != v.TextHash && v.Type.Searchable() && !v.Forgotten {
		if _, err := embedFor(v, first); err != nil {
			return memory.View{}, err
		}
	}

	defer m.lockUser(userID)()
	err = m.appendToAgent(ctx, meta, userID, v.AgentID, func() ([]domain.Payload, error) {
		cur, err := m.get(ctx, userID, id)
		if err != nil {
			return nil, err
		}
		if err := p.IfMatch.check(cur); err != nil {
			return nil, err
		}
		if _, err := m.writable(ctx, userID, cur.AgentID); err != nil {
			return nil, err
		}
		r, err := decidePatch(cur, changes, tags)
		if err != nil || (r.changes == nil && r.tags == nil) {
			return nil, err // nothing changes: record nothing
		}
		usage, err := m.cfg.Reader.Usage(ctx, userID)
		if err != nil {
			return nil, err
		}
		if err := m.cfg.Quotas.CheckTextBytes(usage.TextBytes, int64(len(r.content)-len(cur.Content))); err != nil {
			return nil, err
		}
		payloads := []domain.Payload{memory.MemoryPatched{AgentRef: ref, MemoryID: id, Content: r.changes, Tags: r.tags, TextHash: r.hash, UpdatedAt: m.now()}}
		if r.hash != cur.TextHash && cur.Type.Searchable() && !cur.Forgotten {
			e, err := embedFor(cur, r)
			if err != nil {
				return nil, err
			}
			if e != nil {
				payloads = append(payloads, *e)
			}
		}
		return payloads, nil
	})
	if err != nil {
		return memory.View{}, err
	}
	v, err = m.get(ctx, userID, id)
	if err == nil && v.Embedding.Status == memory.StatusPending {
		m.kick()
	}
	return v, err
}

// embedOne embeds a patched memory's new text with its agent's model; nil
// (and no error) when the provider fails and the queue must do it.
func (m *Memories) embedOne(ctx context.Context, ref memory.AgentRef, id, text, hash string) (*memory.MemoryEmbedded, error) {
	agent, found, err := m.cfg.Reader.Agent(ctx, ref.UserID, ref.AgentID)
	if err != nil || !found {
		return nil, err
	}
	vecs, err := domain.EmbedExactly(ctx, m.cfg.Embedder, m.cfg.EmbedTimeout, agent.EmbeddingModel, agent.Dimensions, []string{text})
	if err != nil {
		m.logger.WarnContext(ctx, "embedding a patched memory failed; queued for embedding", "memory_id", id, "model", agent.EmbeddingModel, "error", err)
		return nil, nil
	}
	return &memory.MemoryEmbedded{AgentRef: ref, MemoryID: id, Model: agent.EmbeddingModel, Dimensions: agent.Dimensions, TextHash: hash, Vector: memory.Vector(vecs[0])}, nil
}

// Forget hides the memory from search and sets its strength to 0; it stays
// readable (with forgotten true) and in the log. Forgetting a forgotten
// memory changes nothing; a protected one cannot be forgotten (409
// memory_protected).
func (m *Memories) Forget(ctx context.Context, meta domain.Metadata, id string, ifMatch IfMatch) (memory.View, error) {
	userID, err := userOf(meta)
	if err != nil {
		return memory.View{}, err
	}
	v, err := m.get(ctx, userID, id)
	if err != nil {
		return memory.View{}, err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: v.AgentID}
	err = m.appendToAgent(ctx, meta, userID, v.AgentID, func() ([]domain.Payload, error) {
		cur, err := m.get(ctx, userID, id)
		if err != nil {
			return nil, err
		}
		if err := ifMatch.check(cur); err != nil || cur.Forgotten {
			return nil, err
		}
		if _, err := m.writable(ctx, userID, cur.AgentID); err != nil {
			return nil, err
		}
		if cur.Protected {
			return nil, errProtected(cur, "forgotten")
		}
		return []domain.Payload{memory.MemoryForgotten{AgentRef: ref, MemoryID: id, ForgottenAt: m.now()}}, nil
	})
	if err != nil {
		return memory.View{}, err
	}
	return m.get(ctx, userID, id)
}

// Purge removes the memory from every projection; the log keeps the fact
// that it was purged.
func (m *Memories) Purge(ctx context.Context, meta domain.Metadata, id string, ifMatch IfMatch) error {
	userID, err := userOf(meta)
	if err != nil {
		return err
	}
	v, err := m.get(ctx, userID, id)
	if err != nil {
		return err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: v.AgentID}
	return m.appendToAgent(ctx, meta, userID, v.AgentID, func() ([]domain.Payload, error) {
		cur, err := m.get(ctx, userID, id)
		if err != nil {
			return nil, err
		}
		if err := ifMatch.check(cur); err != nil {
			return nil, err
		}
		if _, err := m.writable(ctx, userID, cur.AgentID); err != nil {
			return nil, err
		}
		return []domain.Payload{memory.MemoryPurged{AgentRef: ref, MemoryID: id}}, nil
	})
}
