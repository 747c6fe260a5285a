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
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	// The result is written between its frame's two pieces, not copied
	// into one answer: that copy cost as much again as the result's
	// encoding allocates. (A writer keeps none of what it is given, so
	// the frame's buffer serves both pieces.)
	frame := make([]byte, 0, 64+len(req.id))
	frame = append(frame, `{"jsonrpc":"2.0","id":`...)
	frame = append(frame, req.id...)
	frame = append(frame, `,"result":`...)
	_, _ = w.Write(frame)
	_, _ = w.Write(result[:len(result)-1]) // the object without its closing brace
	_, _ = w.Write(append(frame[:0], `,"resultType":"complete"}}`...))
	return true
}

// plainCall reads body as one tools/call request with exactly the members
// the direct path knows, each once, of the tool the Mcp-Name header names
// and the revision the Mcp-Protocol-Version header declares. It walks the
// bytes (objectMembers) rather than decoding them: any request it does not
// read as plain — a member written with escapes or twice included — goes
// to the SDK, which answers it as it would have anyway.
func plainCall(body []byte, nameHeader string) (directRequest, bool) {
	if !json.Valid(body) {
		return directRequest{}, false
	}
	var req directRequest
	var version, method, params, rawID []byte
	if !objectMembers(body, func(key, value []byte) bool {
		switch string(key) {
		case "jsonrpc":
			return once(&version, value)
		case "id":
			return once(&rawID, value)
		case "method":
			return once(&method, value)
		case "params":
			return once(&params, value)
		}
		return false
	}) || string(version) != `"2.0"` || string(method) != `"tools/call"` {
		return directRequest{}, false
	}
	var name, meta []byte
	if !objectMembers(params, func(key, value []byte) bool {
		switch string(key) {
		case "name":
			return once(&name, value)
		case "arguments":
			return once((*[]byte)(&req.arguments), value)
		case "_meta":
			return once(&meta, value)
		}
		return false
	}) || meta == nil || !plainMeta(meta) {
		return directRequest{}, false
	}
	// The name as written is the header's, byte for byte, and a tool's
	// name needs no escapes: an escaped name goes to the SDK.
	if nameHeader == "" || len(name) != len(nameHeader)+2 || name[0] != '"' || string(name[1:len(name)-1]) != nameHeader {
		return directRequest{}, false
	}
	req.name = nameHeader
	var ok bool
	req.id, ok = plainID(rawID)
	return req, ok
}

// once keeps value in *dst and reports whether *dst was empty: a member
// written twice is not plain.
func once(dst *[]byte, value []byte) bool {
	if *dst != nil {
		return false
	}
	*dst = value
	return true
}

// plainMeta reports whether a request's _meta is as the stateless
// revision and the SDK want it: this revision, the client's capabilities
// (required) and its name (optional), each of its type, and nothing else.
func plainMeta(meta []byte) bool {
	var version, caps, info []byte
	if !objectMembers(meta, func(key, value []byte) bool {
		switch string(key) {
		case sdk.MetaKeyProtocolVersion:
			return once(&version, value)
		case sdk.MetaKeyClientCapabilities:
			return once(&caps, value)
		case sdk.MetaKeyClientInfo:
			return once(&info, value)
		}
		return false
	}) || string(version) != `"`+StatelessRevision+`"` {
		return false
	}
	// What clients send most is read without decoding: no capability
	// ({}), and a name whose members are all text.
	return (string(caps) == "{}" || decodes[sdk.ClientCapabilities](caps)) &&
		(info == nil || textMembers(info, "name", "title", "description", "version", "websiteUrl") || decodes[sdk.Implementation](info))
}

// decodes reports whether raw decodes into a *T that is not nil.
func decodes[T any](raw []byte) bool {
	var v *T
	return raw != nil && json.Unmarshal(raw, &v) == nil && v != nil
}

// textMembers reports whether obj is an object whose members are all
// among keys, and text.
func textMembers(obj []byte, keys ...string) bool {
	return objectMembers(obj, func(key, value []byte) bool {
		return slices.Contains(keys, string(key)) && value[0] == '"'
	})
}

// plainID is a JSON-RPC request id, a string or an integer, as the SDK
// writes it in its answer; null, a fraction or any other value is not
// plain.
func plainID(raw []byte) (json.RawMessage, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] != '"' {
		// An integer in JSON is written as the SDK writes it again (no
		// leading zero, no plus sign), but for -0, which is 0.
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if n == 0 {
			raw = raw[len(raw)-1:]
		}
		return raw, err == nil
	}
	if plainASCII(raw[1 : len(raw)-1]) {
		return raw, true // as the SDK writes it again
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	// The SDK writes its answers without escaping HTML's characters.
	var id bytes.Buffer
	enc := json.NewEncoder(&id)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return nil, false
	}
	return bytes.TrimSuffix(id.Bytes(), []byte("\n")), true
}

// plainASCII reports whether s is printable ASCII without a quote or a
// backslash: a JSON string's text the SDK writes again as it is.
func plainASCII(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// acceptsJSONAndStream is the streamable transport's Accept rule: the
// client takes both JSON and an event stream.
func acceptsJSONAndStream(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for token := range strings.SplitSeq(value, ",") {
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
