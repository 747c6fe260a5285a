// Package api is Engram's HTTP interface: chi routes under /v1, the
// success/failure envelope, authentication and rate limits.
package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/engram-memory/engram/domain"
)

// statusByKind is the one place where error kinds become HTTP statuses.
// Codes within a kind come from the domain, e.g. for 403 quota_exceeded
// the quota reached (memory.CodeQuotaMemoriesPerAgent, CodeQuotaAgents,
// CodeQuotaTextBytes); 412 precondition_failed answers a stale If-Match.
var statusByKind = map[domain.Kind]int{
	domain.KindInvalid:             http.StatusBadRequest,
	domain.KindUnauthorized:        http.StatusUnauthorized,
	domain.KindNotFound:            http.StatusNotFound,
	domain.KindConflict:            http.StatusConflict,
	domain.KindQuotaExceeded:       http.StatusForbidden,
	domain.KindPreconditionFailed:  http.StatusPreconditionFailed,
	domain.KindGone:                http.StatusGone,
	domain.KindTooLarge:            http.StatusRequestEntityTooLarge,
	domain.KindUnsupportedMedia:    http.StatusUnsupportedMediaType,
	domain.KindRateLimited:         http.StatusTooManyRequests,
	domain.KindTimeout:             http.StatusRequestTimeout,
	domain.KindProviderUnavailable: http.StatusServiceUnavailable,
	domain.KindIndexUnavailable:    http.StatusServiceUnavailable,
	domain.KindNotYetConsistent:    http.StatusServiceUnavailable,
	domain.KindStorageFull:         http.StatusInsufficientStorage,
	domain.KindInternal:            http.StatusInternalServerError,
}

// StatusOf is the HTTP status of an error kind (500 for a kind the table
// does not know); the dashboard answers with the same table.
func StatusOf(k domain.Kind) int {
	if status, ok := statusByKind[k]; ok {
		return status
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details,omitempty"`
}

// writeError sends the failure envelope. Errors that are not *domain.Error
// are internal: the client gets a generic message, the log gets the detail.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	body := errorBody{Code: string(domain.KindInternal), Message: "internal error", RequestID: requestID(r.Context())}
	status := http.StatusInternalServerError
	var de *domain.Error
	if errors.As(err, &de) && de.Kind != domain.KindInternal {
		body.Code, body.Message, body.Details = de.PublicCode(), de.Message, de.Details
		status = StatusOf(de.Kind)
		if wait, ok := de.Details[domain.DetailRetryAfterSeconds].(int); ok {
			w.Header().Set("Retry-After", strconv.Itoa(wait))
		}
	} else {
		logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "request_id", body.RequestID, "error", err)
	}
	writeFailure(w, status, body)
}

// writeFailure sends the failure envelope.
func writeFailure(w http.ResponseWriter, status int, body errorBody) {
	writeJSON(w, status, struct {
		Success bool      `json:"success"`
		Error   errorBody `json:"error"`
	}{false, body})
}
