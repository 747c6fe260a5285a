package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// directCalls answers the one request an agent sends most — a tools/call
// of the stateless revision — in the HTTP request's own goroutine. The
// SDK's stateless mode builds a session per request and hands the message
// from the HTTP handler to the session's reader, then to a goroutine of
// its own for the call, and the answer back: three goroutine hand-offs
// per call, each of which waits for a CPU on a busy host (at load 17 on
// 2 cores the SDK's path took 2.8 times as long as POST /v1/search for the
// same search; see docs/benchmarks.md). The answer is the SDK's, byte for
// byte (TestMCPDirectCallsAnswerAsTheSDK compares them); any request that
// is not a plain, well-formed call of a known tool goes to the SDK, which
// owns every refusal.
type directCalls struct {
	tools map[string]toolCall
	impl  *sdk.Implementation
}

// toolCall runs one tool call; a tool's failure is an isError result.
type toolCall func(ctx context.Context, req *sdk.CallToolRequest) *sdk.CallToolResult

// directRequest is a tools/call request as the direct path reads it.
type directRequest struct {
	id        json.RawMessage // as the SDK writes it back
	name      string
	arguments json.RawMessage
}

// serve answers r if it is a call the direct path takes, and reports
// whether it did; when it did not, r's body is whole again for the SDK.
func (d *directCalls) serve(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Protocol-Version") != StatelessRevision ||
		r.Header.Get("Mcp-Method") != "tools/call" || len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" || !acceptsJSONAndStream(r.Header.Values("Accept")) {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	req, ok := plainCall(body, r.Header.Get("Mcp-Name"))
	if !ok {
		return false
	}
	call, ok := d.tools[req.name]
	if !ok {
		return false
	}
	res := call(r.Context(), &sdk.CallToolRequest{
		Params: &sdk.CallToolParamsRaw{Name: req.name, Arguments: req.arguments},
		Extra:  &sdk.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header},
	})
	// As the SDK answers a stateless call: the server named in _meta, and
	// the result complete (a tool here never asks for input).
	if res.Meta == nil {
		res.Meta = sdk.Meta{}
	}
	res.Meta[sdk.MetaKeyServerInfo] = d.impl
	// The result's own encoder, not json.Marshal of it, which would scan
	// and copy its whole output once more to check and compact it.
	result, err := res.MarshalJSON()
	if err != nil {
		return false // not reached: a result is plain data, and nothing is written yet
	}
	out := make([]byte, 0, len(result)+64)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, req.id...)
	out = append(out, `,"result":`...)
	out = append(out, result[:len(result)-1]...) // the object without its closing brace
	out = append(out, `,"resultType":"complete"}}`...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return true
}

// plainCall reads body as one tools/call request with exactly the members
// the direct path knows, of the tool the Mcp-Name header names and the
// revision the Mcp-Protocol-Version header declares.
func plainCall(body []byte, nameHeader string) (directRequest, bool) {
	var msg, params, meta map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || !onlyKeys(msg, "jsonrpc", "id", "method", "params") ||
		string(msg["jsonrpc"]) != `"2.0"` || string(msg["method"]) != `"tools/call"` {
		return directRequest{}, false
	}
	if json.Unmarshal(msg["params"], &params) != nil || !onlyKeys(params, "name", "arguments", "_meta") ||
		json.Unmarshal(params["_meta"], &meta) != nil || !onlyKeys(meta, sdk.MetaKeyProtocolVersion, sdk.MetaKeyClientInfo, sdk.MetaKeyClientCapabilities) ||
		string(meta[sdk.MetaKeyProtocolVersion]) != `"`+StatelessRevision+`"` || !clientMeta(meta) {
		return directRequest{}, false
	}
	var name string
	if json.Unmarshal(params["name"], &name) != nil || name == "" || name != nameHeader {
		return directRequest{}, false
	}
	id, ok := plainID(msg["id"])
	return directRequest{id: id, name: name, arguments: params["arguments"]}, ok
}

// clientMeta reports whether the client's _meta is as the SDK wants it:
// its capabilities required, its name optional, each of its type.
func clientMeta(meta map[string]json.RawMessage) bool {
	var caps *sdk.ClientCapabilities
	if json.Unmarshal(meta[sdk.MetaKeyClientCapabilities], &caps) != nil || caps == nil {
		return false
	}
	if info, ok := meta[sdk.MetaKeyClientInfo]; ok {
		var impl *sdk.Implementation
		return json.Unmarshal(info, &impl) == nil && impl != nil
	}
	return true
}

// onlyKeys reports whether m has no key but these.
func onlyKeys(m map[string]json.RawMessage, keys ...string) bool {
	for k := range m {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return true
}

// plainID is a JSON-RPC request id, a string or an integer, as the SDK
// writes it in its answer.
func plainID(raw json.RawMessage) (json.RawMessage, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		id, err := json.Marshal(s)
		return id, err == nil
	}
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return strconv.AppendInt(nil, n, 10), true
	}
	return nil, false
}

// acceptsJSONAndStream is the streamable transport's Accept rule: the
// client takes both JSON and an event stream.
func acceptsJSONAndStream(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for _, token := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(token, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}
