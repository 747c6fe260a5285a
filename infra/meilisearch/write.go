package meilisearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/engram-memory/engram/domain"
	ms "github.com/meilisearch/meilisearch-go"
)

// document is a KeywordDocument as Meilisearch stores it. created_at is
// Unix nanoseconds: Meilisearch returns the stored integer exactly, and
// compares it in filters as a float64, so a time filter is exact to a few
// hundred nanoseconds (see docs/storage-engines.md#meilisearch).
type document struct {
	ID        string   `json:"id"`
	User      string   `json:"user"`
	Agent     string   `json:"agent"`
	Type      string   `json:"type"`
	Tags      []string `json:"tags"`
	CreatedAt int64    `json:"created_at"`
	Forgotten bool     `json:"forgotten"`
	Text      string   `json:"text"`
	Meta      string   `json:"meta"`
	TextHash  string   `json:"text_hash"`
}

// maxDocumentID is Meilisearch's limit on a document id, in bytes.
const maxDocumentID = 511

// upsertBatch is how many documents one request carries at most: large
// rebuild batches become several tasks.
const upsertBatch = 1000

// UpsertDocuments implements domain.KeywordIndex. Meilisearch replaces a
// document with the same id whole, so redelivery is harmless. A memory id
// Meilisearch cannot hold as a document id (only ASCII letters, digits, '-'
// and '_', ≤ 511 bytes) is left out, the others are stored, and the error
// wraps domain.ErrIndexRejected.
func (ix *Index) UpsertDocuments(ctx context.Context, docs ...domain.KeywordDocument) error {
	if len(docs) == 0 {
		return nil
	}
	if err := ix.setup(ctx); err != nil {
		return err
	}
	out := make([]document, 0, len(docs))
	var rejected []string
	for _, d := range docs {
		if !validID(d.MemoryID, maxDocumentID) {
			rejected = append(rejected, strconv.Quote(d.MemoryID))
			continue
		}
		tags := d.Tags
		if tags == nil {
			tags = []string{}
		}
		out = append(out, document{
			ID: d.MemoryID, User: d.UserID, Agent: d.AgentID, Type: d.Type, Tags: tags,
			CreatedAt: d.CreatedAt.UnixNano(), Forgotten: d.Forgotten, Text: d.Text, Meta: d.Meta, TextHash: d.TextHash,
		})
	}
	encoded := make([]json.RawMessage, len(out))
	for i, d := range out {
		b, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("meilisearch: add documents: encode %s: %w", d.ID, err)
		}
		encoded[i] = b
	}
	var infos []*ms.TaskInfo
	var oversized []string
	for _, batch := range ix.batches(encoded) {
		more, tooLarge, err := ix.addDocuments(ctx, batch)
		if err != nil {
			return err
		}
		infos = append(infos, more...)
		for _, d := range tooLarge {
			var id struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(d, &id)
			oversized = append(oversized, fmt.Sprintf("%q (%d bytes)", id.ID, len(d)))
		}
	}
	for _, info := range infos {
		if err := ix.wait(ctx, "add documents", info); err != nil {
			return ix.failed(ctx, "add documents", err)
		}
	}
	if len(rejected) > 0 {
		return fmt.Errorf("meilisearch: memory ids not usable as document ids: %s: %w", strings.Join(rejected, ", "), domain.ErrIndexRejected)
	}
	if len(oversized) > 0 {
		return fmt.Errorf("meilisearch: documents over the server's payload limit, each alone in a request: %s: %w", strings.Join(oversized, ", "), domain.ErrIndexRejected)
	}
	return nil
}

// batches cuts docs into requests of at most upsertBatch documents and
// cfg.MaxPayloadBytes bytes of JSON (a document larger than that alone
// goes in a request of its own).
func (ix *Index) batches(docs []json.RawMessage) [][]json.RawMessage {
	var out [][]json.RawMessage
	start, size := 0, 2 // the array's brackets
	for i, d := range docs {
		if i > start && (i-start == upsertBatch || size+len(d)+1 > ix.cfg.MaxPayloadBytes) {
			out = append(out, docs[start:i])
			start, size = i, 2
		}
		size += len(d) + 1 // and a comma
	}
	return append(out, docs[start:])
}

// addDocuments sends one request of documents. Meilisearch refuses a body
// over its payload limit (--http-payload-size-limit, 100 MB by default,
// which Engram cannot see) with 413 payload_too_large, storing nothing;
// the batch is then sent again in halves, down to single documents, so a
// refused request never loses documents. Only a single document over the
// limit is returned in tooLarge; every other document is in a task.
func (ix *Index) addDocuments(ctx context.Context, docs []json.RawMessage) (infos []*ms.TaskInfo, tooLarge []json.RawMessage, err error) {
	pk := attrID
	info, err := ix.index.AddDocumentsWithContext(ctx, docs, &ms.DocumentOptions{PrimaryKey: &pk})
	if err == nil {
		return []*ms.TaskInfo{info}, nil, nil
	}
	if apiErrorCode(err) != "payload_too_large" {
		return nil, nil, ix.failed(ctx, "add documents", err)
	}
	if len(docs) == 1 {
		return nil, docs, nil
	}
	half := len(docs) / 2
	for _, part := range [][]json.RawMessage{docs[:half], docs[half:]} {
		more, big, err := ix.addDocuments(ctx, part)
		if err != nil {
			return nil, nil, err
		}
		infos, tooLarge = append(infos, more...), append(tooLarge, big...)
	}
	return infos, tooLarge, nil
}

// SetForgotten implements domain.KeywordIndex. Meilisearch's partial update
// would create a document that is absent, so the document is read first:
// absent, or another agent's, is a no-op.
func (ix *Index) SetForgotten(ctx context.Context, scope domain.IndexScope, memoryID string, forgotten bool) error {
	if !validID(memoryID, maxDocumentID) {
		return nil // no such document can exist
	}
	if err := ix.setup(ctx); err != nil {
		return err
	}
	var cur struct {
		User      string `json:"user"`
		Agent     string `json:"agent"`
		Forgotten bool   `json:"forgotten"`
	}
	err := ix.index.GetDocumentWithContext(ctx, memoryID, &ms.DocumentQuery{Fields: []string{attrUser, attrAgent, attrForgotten}}, &cur)
	if apiErrorCode(err) == "document_not_found" {
		return nil
	}
	if err != nil {
		return ix.failed(ctx, "get document", err)
	}
	if cur.User != scope.UserID || cur.Agent != scope.AgentID || cur.Forgotten == forgotten {
		return nil
	}
	change := []map[string]any{{attrID: memoryID, attrForgotten: forgotten}}
	pk := attrID
	info, err := ix.index.UpdateDocumentsWithContext(ctx, change, &ms.DocumentOptions{PrimaryKey: &pk})
	if err != nil {
		return ix.failed(ctx, "update document", err)
	}
	return ix.failed(ctx, "update document", ix.wait(ctx, "update document", info))
}

// DeleteMemory implements domain.KeywordIndex; the filter keeps it inside
// the scope.
func (ix *Index) DeleteMemory(ctx context.Context, scope domain.IndexScope, memoryID string) error {
	return ix.deleteWhere(ctx, "delete memory", scopeFilter(scope)+" AND "+attrID+" = "+quote(memoryID))
}

// DeleteAgent implements domain.KeywordIndex.
func (ix *Index) DeleteAgent(ctx context.Context, scope domain.IndexScope) error {
	return ix.deleteWhere(ctx, "delete agent", scopeFilter(scope))
}

// deleteWhere deletes the documents matching filter; an index that lost
// its settings (see settingsLost) has them re-applied and the deletion
// runs once more.
func (ix *Index) deleteWhere(ctx context.Context, op, filter string) error {
	for attempt := 0; ; attempt++ {
		if err := ix.setup(ctx); err != nil {
			return err
		}
		info, err := ix.index.DeleteDocumentsByFilterWithContext(ctx, filter, nil)
		if err == nil {
			err = ix.wait(ctx, op, info)
		}
		if err == nil || !settingsLost(err) || attempt > 0 {
			return ix.failed(ctx, op, err)
		}
		_ = ix.failed(ctx, op, err) // marks the index for setup
	}
}

// DropAll implements domain.KeywordIndex: every document goes, the index
// and its settings stay.
func (ix *Index) DropAll(ctx context.Context) error {
	if err := ix.setup(ctx); err != nil {
		return err
	}
	info, err := ix.index.DeleteAllDocumentsWithContext(ctx, nil)
	if err != nil {
		return ix.failed(ctx, "delete all documents", err)
	}
	return ix.failed(ctx, "delete all documents", ix.wait(ctx, "delete all documents", info))
}

// wait polls the task until it finishes, at most cfg.TaskTimeout: at
// once, then after 1, 2, 4, … ms up to cfg.TaskPollInterval apart, so a
// quick task (the common case) delays the write by a few milliseconds and
// a long one costs few requests. A task that failed is a *taskError; one
// still pending at the timeout is unavailable (the write may yet apply;
// redelivering it is harmless).
func (ix *Index) wait(ctx context.Context, op string, info *ms.TaskInfo) error {
	wctx, cancel := context.WithTimeout(ctx, ix.cfg.TaskTimeout)
	defer cancel()
	for pause := time.Millisecond; ; pause = min(2*pause, ix.cfg.TaskPollInterval) {
		task, err := ix.client.GetTaskWithContext(wctx, info.TaskUID)
		if err == nil && task.Status != ms.TaskStatusEnqueued && task.Status != ms.TaskStatusProcessing {
			if task.Status != ms.TaskStatusSucceeded {
				return &taskError{Op: op, Status: string(task.Status), Code: task.Error.Code, Type: task.Error.Type, Message: task.Error.Message}
			}
			return nil
		}
		if err == nil {
			timer := time.NewTimer(pause)
			select {
			case <-timer.C:
				continue
			case <-wctx.Done():
				timer.Stop()
			}
		}
		if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("meilisearch: %s: task %d still pending after %s: %w", op, info.TaskUID, ix.cfg.TaskTimeout, domain.ErrIndexUnavailable)
		}
		if err == nil {
			err = ctx.Err()
		}
		return classify(ctx, op+": wait for task", err)
	}
}

// apiErrorCode is the Meilisearch error code of a failed request, or "".
func apiErrorCode(err error) string {
	var me *ms.Error
	if errors.As(err, &me) {
		return me.MeilisearchApiError.Code
	}
	return ""
}

// unixNanos is the time of a stored created_at.
func unixNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }
