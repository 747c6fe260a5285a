// Package domain holds Engram's aggregates, events and rules. It imports
// nothing of ours, so every other package can depend on it.
package domain

import (
	"errors"
	"fmt"
)

// Kind classifies an error by how a caller should react to it. Each kind maps
// to exactly one HTTP status in api/errors.go.
type Kind string

const (
	KindInvalid             Kind = "invalid_request"
	KindUnauthorized        Kind = "unauthorized"
	KindNotFound            Kind = "not_found"
	KindConflict            Kind = "conflict"
	KindQuotaExceeded       Kind = "quota_exceeded"
	KindPreconditionFailed  Kind = "precondition_failed"
	KindGone                Kind = "gone"
	KindTooLarge            Kind = "payload_too_large"
	KindUnsupportedMedia    Kind = "unsupported_media_type"
	KindRateLimited         Kind = "rate_limited"
	KindTimeout             Kind = "request_timeout"
	KindProviderUnavailable Kind = "provider_unavailable"
	// KindIndexUnavailable: a search index the request needs is down
	// (the error's code names which: keyword_index_unavailable or
	// vector_index_unavailable).
	KindIndexUnavailable Kind = "index_unavailable"
	// KindNotYetConsistent: this node has not yet applied the write a
	// request's consistency token names (another node took it).
	KindNotYetConsistent Kind = "not_yet_consistent"
	// KindNotStored: a write gave up before anything of it was stored
	// (the log moved on while it decided, and the read models did not
	// catch up in time); sending it again is safe.
	KindNotStored Kind = "write_not_stored"
	// KindStorageFull: the server's storage has no space left, so the
	// write was refused and nothing of it was stored.
	KindStorageFull Kind = "storage_full"
	KindInternal    Kind = "internal"
)

// DetailRetryAfterSeconds is the detail of a KindRateLimited error that
// says how many seconds to wait; the API sends it as Retry-After too.
const DetailRetryAfterSeconds = "retry_after_seconds"

// Error is the one application error type. Code is the specific snake_case
// code clients see (e.g. "last_active_key"); it defaults to the kind.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Details map[string]any
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.code(), e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.code(), e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) code() string {
	if e.Code != "" {
		return e.Code
	}
	return string(e.Kind)
}

// PublicCode is the code shown to API clients.
func (e *Error) PublicCode() string { return e.code() }

// Errorf builds an Error of the given kind with a formatted message.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports a bad input field; field is named in the details.
func Invalid(field, format string, args ...any) *Error {
	e := Errorf(KindInvalid, format, args...)
	if field != "" {
		e.Details = map[string]any{"field": field}
	}
	return e
}

// NotFound reports a missing resource (also used for other users' resources).
func NotFound(what string) *Error { return Errorf(KindNotFound, "%s not found", what) }

// Conflict reports a state conflict with a specific code.
func Conflict(code, format string, args ...any) *Error {
	e := Errorf(KindConflict, format, args...)
	e.Code = code
	return e
}

// WithCode returns a copy of e with a specific code.
func (e *Error) WithCode(code string) *Error { c := *e; c.Code = code; return &c }

// WithDetail returns a copy of e with one more detail.
func (e *Error) WithDetail(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// ErrorKind returns the kind of err, KindInternal for errors that are not ours.
func ErrorKind(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// ErrStorageFull marks a failure caused by storage with no space left (a
// full disk): no write can succeed until space is freed.
var ErrStorageFull = errors.New("storage is full")
