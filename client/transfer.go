package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
)

// ImportResult is the data of POST /agents/{agent_id}/import.
type ImportResult struct {
	Format     string `json:"format"`
	Appended   int    `json:"appended"`
	Duplicates int    `json:"duplicates"`
	Skipped    int    `json:"skipped"`
	Remapped   int    `json:"remapped"`
}

// ndjson is the media type of exports and imports.
const ndjson = "application/x-ndjson"

// ExportAgent streams the agent's export (format "" or "events": the
// lossless form; "memories": each memory's current state) as JSON Lines;
// the caller reads and closes it. The client's HTTP timeout bounds the
// whole stream, so a long export wants a client with a long one.
func (c *Client) ExportAgent(ctx context.Context, agentID, format string) (io.ReadCloser, error) {
	q := url.Values{}
	if format != "" {
		q.Set("format", format)
	}
	resp, err := c.send(ctx, http.MethodGet, "/agents/"+pathID(agentID)+"/export", q, http.Header{"Accept": {ndjson}}, nil, bearer)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp.Body, nil
}

// ImportAgent sends one request of an import: JSON Lines of an export (its
// header first), appended all or nothing. Send a large export in several
// requests of at most the server's body limit, each with the header.
func (c *Client) ImportAgent(ctx context.Context, agentID string, lines []byte) (*ImportResult, error) {
	var out ImportResult
	err := c.call(ctx, http.MethodPost, "/agents/"+pathID(agentID)+"/import", nil, rawBody{contentType: ndjson, data: lines}, &out, bearer)
	return ret(&out, err)
}

// rawBody is a request body sent as is, with its content type.
type rawBody struct {
	contentType string
	data        []byte
}

func (b rawBody) reader() io.Reader { return bytes.NewReader(b.data) }
