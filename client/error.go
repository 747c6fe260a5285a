package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ErrInsecureURL is returned, before anything is sent, for a call that
// would carry a secret over plain http to a host that is not loopback.
var ErrInsecureURL = errors.New("client: refusing to send a secret over plain http to a non-loopback host; use https")

// Error is a failure the server reported: the failure envelope's error
// object plus the HTTP status. A non-JSON failure (say, from a proxy) has
// an empty Code and the start of the body as Message.
type Error struct {
	Status    int            // HTTP status code
	Code      string         // snake_case code, e.g. "not_found", "invalid_request"
	Message   string         // human text
	RequestID string         // the request's X-Request-Id, for the server log
	Details   map[string]any // e.g. the invalid field; may be nil
	// RetryAfter is the server's Retry-After on 429 and 503; zero if absent.
	RetryAfter time.Duration
	// ConsistencyToken is the response's Engram-Consistency-Token, set
	// when the request wrote before it failed. On 503
	// CodeWriteNotYetVisible the write is stored: wait for it with
	// WaitVisible instead of sending it again, which stores a copy. On
	// 503 CodeWriteNotStored nothing was stored and there is no token:
	// send the request again.
	ConsistencyToken string
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.Status)
	}
	s := fmt.Sprintf("engram: %d %s: %s", e.Status, code, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// IsCode reports whether err is an *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsStatus reports whether err is an *Error with the given HTTP status.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// parseRetryAfter reads delay-seconds; HTTP dates are rare from an API.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
