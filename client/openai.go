package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// OpenAIEmbeddingRequest is the body of the OpenAI-compatible
// POST /v1/embeddings. Input is a string or a []string.
type OpenAIEmbeddingRequest struct {
	Input          any    `json:"input"`
	Model          string `json:"model"`
	Dimensions     int    `json:"dimensions,omitempty"`
	EncodingFormat string `json:"encoding_format,omitempty"` // "float" (default) or "base64"
}

// OpenAIEmbeddingResponse is OpenAI's response shape (no Engram envelope).
// With encoding_format "base64" each Embedding is a base64 string, so it is
// kept raw.
type OpenAIEmbeddingResponse struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// OpenAIEmbeddings calls the OpenAI-compatible endpoint, meant for OpenAI
// SDKs; Go code would rather use GenerateEmbeddings. Failures, which come
// in OpenAI's error shape, are returned as *Error with Code set from the
// error's code (or its type).
func (c *Client) OpenAIEmbeddings(ctx context.Context, req OpenAIEmbeddingRequest) (*OpenAIEmbeddingResponse, error) {
	resp, err := c.send(ctx, http.MethodPost, "/embeddings", nil, nil, req, bearer)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, decodeOpenAIError(resp)
	}
	var out OpenAIEmbeddingResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("client: POST /embeddings: decode response: %w", err)
	}
	return &out, nil
}

func decodeOpenAIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   any    `json:"param"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Error == nil {
		// Not OpenAI's shape: maybe Engram's own envelope.
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return decodeError(resp)
	}
	e := &Error{
		Status:     resp.StatusCode,
		Code:       body.Error.Type,
		Message:    body.Error.Message,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After")),
	}
	if code, ok := body.Error.Code.(string); ok && code != "" {
		e.Code = code
	}
	if body.Error.Param != nil {
		e.Details = map[string]any{"param": body.Error.Param}
	}
	return e
}
