// Package httpstatus maps error kinds to HTTP statuses in one table, which the
// API and the dashboard both answer with. It depends on the domain only,
// so the read-only dashboard need not import the API (and through it the
// write side).
package httpstatus

import (
	"net/http"

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
	domain.KindNotStored:           http.StatusServiceUnavailable,
	domain.KindStorageFull:         http.StatusInsufficientStorage,
	domain.KindInternal:            http.StatusInternalServerError,
}

// Of is the HTTP status of an error kind (500 for a kind the table does
// not know).
func Of(k domain.Kind) int {
	if status, ok := statusByKind[k]; ok {
		return status
	}
	return http.StatusInternalServerError
}
