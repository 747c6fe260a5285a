package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// newJSONRequest is a request carrying body as JSON (no body for nil) and
// bearer's credentials (none for "").
func newJSONRequest(t *testing.T, method, url, bearer string, body any) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return req
}

// call sends a JSON request and decodes the envelope's data into out.
func call(t *testing.T, method, url, bearer string, body, out any) (int, error) {
	t.Helper()
	resp, err := http.DefaultClient.Do(newJSONRequest(t, method, url, bearer, body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		env := struct {
			Data json.RawMessage `json:"data"`
		}{}
		if err := json.Unmarshal(raw, &env); err != nil {
			return resp.StatusCode, err
		}
		return resp.StatusCode, json.Unmarshal(env.Data, out)
	}
	return resp.StatusCode, nil
}
