package meilisearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/engram-memory/engram/domain"
	ms "github.com/meilisearch/meilisearch-go"
)

// errKeyRefused marks a request the server refused for its API key (401
// or 403); it is wrapped together with domain.ErrIndexUnavailable.
var errKeyRefused = errors.New("meilisearch refused the API key")

// errUnsupportedServer marks a server older than the adapter needs; it is
// wrapped together with domain.ErrIndexUnavailable.
var errUnsupportedServer = errors.New("unsupported Meilisearch version")

// taskError is a task that finished without succeeding; Code and Type are
// Meilisearch's error code (e.g. "index_already_exists") and error type.
type taskError struct {
	Op, Status, Code, Type, Message string
}

func (e *taskError) Error() string {
	return fmt.Sprintf("meilisearch: %s: task %s: %s (%s)", e.Op, e.Status, e.Message, e.Code)
}

// Unwrap makes a task the server could not carry out for its own reasons
// (error type "internal" or "system", e.g. a full disk) or that was
// canceled unavailable: the same write can succeed later.
func (e *taskError) Unwrap() error {
	if e.Status == string(ms.TaskStatusCanceled) || e.Type == "internal" || e.Type == "system" {
		return domain.ErrIndexUnavailable
	}
	return nil
}

// taskErrorCode is the Meilisearch code of the task error in err, or "".
func taskErrorCode(err error) string {
	var te *taskError
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

// classify wraps an error of the Meilisearch client so callers can react
// by errors.Is: a server that cannot be reached, fails (5xx), times out or
// refuses the key is domain.ErrIndexUnavailable (the projection retries,
// a search answers 503). The caller's own cancellation stays its context
// error. Anything else (a request the server rejects as malformed) is a
// bug here and is returned as is, wrapped with the operation.
func classify(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("meilisearch: %s: %w", op, ctx.Err())
	}
	var me *ms.Error
	if !errors.As(err, &me) {
		return fmt.Errorf("meilisearch: %s: %w: %w", op, err, domain.ErrIndexUnavailable)
	}
	switch {
	case me.StatusCode == http.StatusUnauthorized || me.StatusCode == http.StatusForbidden:
		return fmt.Errorf("meilisearch: %s: %s (check ENGRAM_MEILISEARCH_API_KEY): %w: %w", op, me.MeilisearchApiError.Message, errKeyRefused, domain.ErrIndexUnavailable)
	case me.StatusCode >= 500, me.StatusCode == 0,
		me.ErrCode == ms.MeilisearchCommunicationError, me.ErrCode == ms.MeilisearchTimeoutError, me.ErrCode == ms.MeilisearchMaxRetriesExceeded:
		return fmt.Errorf("meilisearch: %s: %w: %w", op, err, domain.ErrIndexUnavailable)
	}
	return fmt.Errorf("meilisearch: %s: %w", op, err)
}

// failed classifies an error of an operation on the index. An index that
// is gone (deleted behind Engram's back) is unavailable, and the next
// operation creates and configures it again; its documents come back with
// `engram projections rebuild`.
func (ix *Index) failed(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if settingsLost(err) {
		ix.setupMu.Lock()
		ix.ready = false
		ix.setupMu.Unlock()
		return fmt.Errorf("meilisearch: %s: index %q lost its settings (deleted and re-created outside Engram?); they are re-applied: %w: %w", op, ix.cfg.IndexName, err, domain.ErrIndexUnavailable)
	}
	if apiErrorCode(err) != "index_not_found" && taskErrorCode(err) != "index_not_found" {
		var te *taskError
		if errors.As(err, &te) || errors.Is(err, domain.ErrIndexUnavailable) {
			return err // already classified by wait
		}
		return classify(ctx, op, err)
	}
	ix.setupMu.Lock()
	ix.ready = false
	ix.setupMu.Unlock()
	return fmt.Errorf("meilisearch: %s: index %q not found (the next operation re-creates it): %w", op, ix.cfg.IndexName, domain.ErrIndexUnavailable)
}

// settingsLost reports an error that only an index without Engram's
// settings gives: the filters Engram sends name only attributes it makes
// filterable, so Meilisearch refusing one (invalid_search_filter,
// invalid_document_filter: "Attribute `user` is not filterable") means the
// index was deleted and then re-created bare, by a write (Meilisearch
// creates a missing index on a document addition, with default settings).
func settingsLost(err error) bool {
	for _, code := range []string{apiErrorCode(err), taskErrorCode(err)} {
		if code == "invalid_search_filter" || code == "invalid_document_filter" {
			return true
		}
	}
	return false
}
