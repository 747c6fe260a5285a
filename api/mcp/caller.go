package mcp

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/domain"
)

// Caller is who a tool call acts for when the transport authenticates each
// request (HTTP): the credential's actor, the HTTP request's id (which the
// events of its writes carry), and the agent the connection is bound to
// ("" for none).
type Caller struct {
	Actor     domain.Actor
	RequestID string
	Agent     string
}

type callerKey struct{}

// WithCaller returns ctx carrying c; a Backend reads it with CallerFrom.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, if any (none on stdio).
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// tokenExtraCaller is the key of the Caller in the token info the HTTP
// transport attaches to every request.
const tokenExtraCaller = "engram.caller"

// callerOf returns the caller the HTTP transport attached to the request,
// if any.
func callerOf(extra *sdk.RequestExtra) (Caller, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return Caller{}, false
	}
	c, ok := extra.TokenInfo.Extra[tokenExtraCaller].(Caller)
	return c, ok
}

// tokenInfo is the token info of an authenticated request. Its UserID,
// which the SDK compares on every request of a session, joins the user and
// the bound agent: a session cannot be carried to another user, nor from a
// bound connection to an unbound one.
func tokenInfo(c Caller) *auth.TokenInfo {
	return &auth.TokenInfo{
		UserID: c.Actor.UserID + "\x00" + c.Agent,
		Extra:  map[string]any{tokenExtraCaller: c},
	}
}

// relayedTokens holds, for one tool call, the consistency token of the last
// write its Backend made through another server.
type relayedTokens struct {
	mu   sync.Mutex
	last string
}

type relayedTokensKey struct{}

// trackRelayedTokens returns ctx collecting the tokens a Backend reports
// with ReportConsistencyToken during one tool call.
func trackRelayedTokens(ctx context.Context) (context.Context, *relayedTokens) {
	t := &relayedTokens{}
	return context.WithValue(ctx, relayedTokensKey{}, t), t
}

func (t *relayedTokens) lastToken() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// ReportConsistencyToken tells the tool call ctx belongs to the
// consistency token of a write its Backend made through another server
// (the stdio cloud backend relays the API's Engram-Consistency-Token): the
// call's result names the last one in _meta, as it names the position of
// a write made here.
func ReportConsistencyToken(ctx context.Context, token string) {
	if t, ok := ctx.Value(relayedTokensKey{}).(*relayedTokens); ok && token != "" {
		t.mu.Lock()
		t.last = token
		t.mu.Unlock()
	}
}
