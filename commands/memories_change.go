package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// MemoryPatch changes a memory. Content is merged into the stored content
// field by field (top-level keys replace, a null removes the field so its
// default applies again), then validated as a whole; Tags replaces the tag
// list. A nil field is left alone.
type MemoryPatch struct {
	Content json.RawMessage
	Tags    *[]string
}

// Patch applies p to the user's memory and returns it as stored. When the
// indexed text changes it is embedded again, in the same append; a patch
// of tags alone never calls the provider.
func (m *Memories) Patch(ctx context.Context, meta domain.Metadata, id string, p MemoryPatch) (memory.View, error) {
	userID, err := userOf(meta)
	if err != nil {
		return memory.View{}, err
	}
	if p.Content == nil && p.Tags == nil {
		return memory.View{}, domain.Invalid("", "nothing to change: send content and/or tags")
	}
	v, err := m.Get(ctx, userID, id)
	if err != nil {
		return memory.View{}, err
	}
	content := v.Content
	if p.Content != nil {
		merged, err := mergeContent(v.Content, p.Content)
		if err != nil {
			return memory.View{}, err
		}
		if content, err = memory.NormalizeContent(v.Type, merged); err != nil {
			return memory.View{}, err
		}
	}
	tags := v.Tags
	if p.Tags != nil {
		if tags, err = memory.NormalizeTags("tags", *p.Tags); err != nil {
			return memory.View{}, err
		}
	}
	if bytes.Equal(content, v.Content) && slices.Equal(tags, v.Tags) {
		return v, nil // nothing changes: record nothing
	}
	text, err := memory.IndexedText(v.Type, content)
	if err != nil {
		return memory.View{}, err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: v.AgentID}
	hash := memory.TextHash(text)
	payloads := []domain.Payload{memory.MemoryUpdated{AgentRef: ref, MemoryID: id, Content: content, Tags: tags, TextHash: hash, UpdatedAt: m.now()}}
	if hash != v.TextHash && v.Type.Searchable() && !v.Forgotten {
		embedded, err := m.embedOne(ctx, ref, id, text, hash)
		if err != nil {
			return memory.View{}, err
		}
		if embedded != nil {
			payloads = append(payloads, *embedded)
		}
	}
	if _, err := m.cfg.Writer.Append(ctx, memory.AgentStream(userID, v.AgentID), domain.ExpectAny, meta, payloads...); err != nil {
		return memory.View{}, err
	}
	// Read back what the log settled on: a purge or agent delete that won
	// the race makes this a 404, like any later read.
	v, err = m.Get(ctx, userID, id)
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
	vecs, err := embedTexts(ctx, m.cfg.Embedder, m.cfg.EmbedTimeout, agent.EmbeddingModel, agent.Dimensions, []string{text})
	if err != nil {
		m.logger.WarnContext(ctx, "embedding a patched memory failed; queued for embedding", "memory_id", id, "model", agent.EmbeddingModel, "error", err)
		return nil, nil
	}
	return &memory.MemoryEmbedded{AgentRef: ref, MemoryID: id, Model: agent.EmbeddingModel, Dimensions: agent.Dimensions, TextHash: hash, Vector: memory.Vector(vecs[0])}, nil
}

// mergeContent merges the top-level fields of patch into stored (RFC 7396
// at the first level: nested values are replaced whole).
func mergeContent(stored, patch json.RawMessage) (json.RawMessage, error) {
	var base, changes map[string]json.RawMessage
	if err := json.Unmarshal(stored, &base); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &changes); err != nil || changes == nil {
		return nil, domain.Invalid("content", "content must be a JSON object of the fields to change")
	}
	for k, v := range changes {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	return json.Marshal(base)
}

// Forget hides the memory from search; it stays readable (with forgotten
// true) and in the log. Forgetting a forgotten memory changes nothing.
func (m *Memories) Forget(ctx context.Context, meta domain.Metadata, id string) (memory.View, error) {
	userID, err := userOf(meta)
	if err != nil {
		return memory.View{}, err
	}
	v, err := m.Get(ctx, userID, id)
	if err != nil || v.Forgotten {
		return v, err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: v.AgentID}
	if _, err := m.cfg.Writer.Append(ctx, memory.AgentStream(userID, v.AgentID), domain.ExpectAny, meta,
		memory.MemoryForgotten{AgentRef: ref, MemoryID: id, ForgottenAt: m.now()}); err != nil {
		return memory.View{}, err
	}
	return m.Get(ctx, userID, id)
}

// Purge removes the memory from every projection; the log keeps the fact
// that it was purged.
func (m *Memories) Purge(ctx context.Context, meta domain.Metadata, id string) error {
	userID, err := userOf(meta)
	if err != nil {
		return err
	}
	v, err := m.Get(ctx, userID, id)
	if err != nil {
		return err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: v.AgentID}
	_, err = m.cfg.Writer.Append(ctx, memory.AgentStream(userID, v.AgentID), domain.ExpectAny, meta, memory.MemoryPurged{AgentRef: ref, MemoryID: id})
	return err
}
