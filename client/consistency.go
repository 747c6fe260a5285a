package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// consistencyTokenHeader carries read-your-writes across nodes: the server
// names a write's log position in it, and holds a request that sends it
// back until its read models include that position.
const consistencyTokenHeader = "Engram-Consistency-Token"

// CodeWriteNotYetVisible is the code of a 503 to a write the server
// stored but had not applied to every read model within its visibility
// timeout: it will become visible, and sending it again stores a copy.
const CodeWriteNotYetVisible = "write_not_yet_visible"

// CodeWriteNotStored is the code of a 503 to a write the server gave up
// on before storing anything of it (other writes to the agent came first
// and its read models did not catch up in time): sending it again after
// Retry-After is safe.
const CodeWriteNotStored = "write_not_stored"

// codeNotYetConsistent is the server's answer to a token it has not
// reached within its --consistency-wait.
const codeNotYetConsistent = "not_yet_consistent"

// WaitVisible returns once the server's read models include the write that
// token names (Error.ConsistencyToken of a 503 write_not_yet_visible), so
// that what follows reads it. It sends GET /agents?limit=1 (the cheapest
// read any credential may make) carrying the token, which the server holds
// until then or for at most its --consistency-wait, and sends it again
// after the Retry-After of each 503 not_yet_consistent until ctx ends: ctx
// bounds the whole wait.
func (c *Client) WaitVisible(ctx context.Context, token string) error {
	if token == "" {
		return errors.New("client: no consistency token to wait for")
	}
	header := http.Header{consistencyTokenHeader: {token}}
	for {
		err := c.callWithHeader(ctx, http.MethodGet, "/agents", url.Values{"limit": {"1"}}, header, nil, nil, bearer)
		var e *Error
		if !errors.As(err, &e) || e.Code != codeNotYetConsistent {
			return err
		}
		wait := e.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("client: wait for consistency token %s: %w (last answer: %v)", token, ctx.Err(), err)
		case <-time.After(wait):
		}
	}
}
