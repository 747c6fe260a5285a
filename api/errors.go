// Package api is Engram's HTTP interface: chi routes under /v1, the
// success/failure envelope, authentication and rate limits.
package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/engram-memory/engram/api/httpstatus"
	"github.com/engram-memory/engram/domain"
)

type errorBody struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details,omitempty"`
}

// Failure is what a client may learn of an error: the code, message and
// details of the failure envelope.
type Failure struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// PublicFailure is err as the failure envelope shows it, and its HTTP
// status. Errors that are not *domain.Error are internal: internal is true,
// and the failure is a generic message without the error's detail (which
// only the log may hold). The MCP tools report errors with it.
func PublicFailure(err error) (f Failure, status int, internal bool) {
	var de *domain.Error
	if errors.As(err, &de) && de.Kind != domain.KindInternal {
		return Failure{Code: de.PublicCode(), Message: de.Message, Details: de.Details}, httpstatus.Of(de.Kind), false
	}
	return Failure{Code: string(domain.KindInternal), Message: "internal error"}, http.StatusInternalServerError, true
}

// writeError sends the failure envelope. Errors that are not *domain.Error
// are internal: the client gets a generic message, the log gets the detail.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	noteFailure(r.Context(), err)
	body, status := failureBody(r, logger, "request failed", err)
	if wait, ok := body.Details[domain.DetailRetryAfterSeconds].(int); ok {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
	}
	writeFailure(w, status, body)
}

// failureBody is err as the failure envelope's error object shows it, and
// its HTTP status; an internal error's detail goes to the log only, under
// msg.
func failureBody(r *http.Request, logger *slog.Logger, msg string, err error) (errorBody, int) {
	f, status, internal := PublicFailure(err)
	body := errorBody{Code: f.Code, Message: f.Message, Details: f.Details, RequestID: requestID(r.Context())}
	if internal {
		logger.ErrorContext(r.Context(), msg, "method", r.Method, "path", r.URL.Path, "request_id", body.RequestID, "error", err)
	}
	return body, status
}

// writeFailure sends the failure envelope.
func writeFailure(w http.ResponseWriter, status int, body errorBody) {
	writeJSON(w, status, struct {
		Success bool      `json:"success"`
		Error   errorBody `json:"error"`
	}{false, body})
}
