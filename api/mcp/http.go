package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-memory/engram/api"
)

// StatelessRevision is the first protocol revision served statelessly
// (SEP-2575: no initialize handshake and no session, every request
// carrying its version); the SDK serves it only in its stateless mode.
const StatelessRevision = "2026-07-28"

// sessionIdleTimeout closes a session that has seen no request for so
// long; its client starts a new one.
const sessionIdleTimeout = 30 * time.Minute

// HTTPHandler serves server over streamable HTTP, for mounting behind the
// API's authentication (api.Config.MCP): every request carries its
// authenticated caller to the tools, and ?agent_id= binds the connection to
// that agent. Requests of revision 2026-07-28 or later (by their
// Mcp-Protocol-Version header) are served statelessly; earlier ones (an
// initialize handshake, then Mcp-Session-Id) in session mode, so a client of
// either revision negotiates as the spec has it. A session is tied to the
// user and binding that opened it.
func HTTPHandler(server *Server, logger *slog.Logger) http.Handler {
	return httpHandler(server, logger, true)
}

// SDKHTTPHandler is HTTPHandler with every request served by the SDK,
// stateless calls included: the reference the direct path must answer
// alike (TestMCPDirectCallsAnswerAsTheSDK).
func SDKHTTPHandler(server *Server, logger *slog.Logger) http.Handler {
	return httpHandler(server, logger, false)
}

func httpHandler(server *Server, logger *slog.Logger, direct bool) http.Handler {
	getServer := func(*http.Request) *sdk.Server { return server.Server }
	// The API already bounds request bodies (Config.MaxBodyBytes). The
	// SDK's DNS-rebinding guard (a loopback listener refusing other Host
	// names) is off: every request here carries a bearer credential a
	// rebound page cannot have, and the guard would refuse a server behind
	// a reverse proxy on the same host.
	sessions := sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
		JSONResponse: true, Logger: logger, SessionTimeout: sessionIdleTimeout, MaxRequestBodyBytes: -1, DisableLocalhostProtection: true,
	})
	stateless := sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: logger, MaxRequestBodyBytes: -1, DisableLocalhostProtection: true,
	})
	dispatch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &rpcErrorWriter{ResponseWriter: w}
		defer rw.finish()
		w = rw
		switch {
		case r.Method == http.MethodGet:
			// No server-initiated messages are ever sent, and a standing
			// stream would hold one of the API's in-flight slots for the
			// session's life: the spec lets a server refuse it with 405.
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, "this server sends no server-initiated messages: POST requests only", http.StatusMethodNotAllowed)
		case r.Header.Get("Mcp-Protocol-Version") >= StatelessRevision:
			if direct && server.direct.serve(w, r) {
				return
			}
			stateless.ServeHTTP(w, r)
		default:
			sessions.ServeHTTP(w, r)
		}
	})
	return auth.RequireBearerToken(verifyCaller, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(dispatch)
}

// verifyCaller hands the SDK the caller the API authenticated (the
// credential was checked, rate-limited and charged before this runs).
func verifyCaller(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	actor, requestID, ok := api.Caller(r.Context())
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return tokenInfo(Caller{Actor: actor, RequestID: requestID, Agent: r.URL.Query().Get("agent_id")}), nil
}

// JSON-RPC error codes of messages the SDK refuses before reading them as
// requests.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// rpcErrorWriter turns the SDK's plain-text 400 answers to malformed
// messages (a body that is not JSON, a request missing its params, …)
// into JSON-RPC error responses with a null id, as a client reading the
// body as JSON-RPC expects; every other answer passes through.
type rpcErrorWriter struct {
	http.ResponseWriter
	rewrite bool
	body    bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.rewrite = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrorWriter) Write(p []byte) (int, error) {
	if w.rewrite {
		return w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the JSON-RPC error of a rewritten answer.
func (w *rpcErrorWriter) finish() {
	if !w.rewrite {
		return
	}
	msg := strings.TrimSpace(w.body.String())
	code := rpcInvalidRequest
	if strings.HasPrefix(msg, "malformed payload") {
		code = rpcParseError
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(http.StatusBadRequest)
	_, _ = w.ResponseWriter.Write(body)
}
