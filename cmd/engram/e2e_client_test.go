package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// call sends a JSON request and decodes the envelope's data into out.
func call(t *testing.T, method, url, bearer string, body, out any) (int, error) {
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
	resp, err := http.DefaultClient.Do(req)
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

var tokenLine = regexp.MustCompile(`(?m)^(engv_[A-Za-z0-9]+)$`)

// registerUser signs up email through the API and the outbox, returning the
// initial API key.
func registerUser(t *testing.T, baseURL, outbox, email string) string {
	t.Helper()
	if _, err := call(t, "POST", baseURL+"/v1/auth/register", "", map[string]string{"email": email}, nil); err != nil {
		t.Fatal(err)
	}
	var token string
	deadline := time.Now().Add(10 * time.Second)
	for token == "" && time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(outbox, "*.eml"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte("To: "+email)) || bytes.Contains(b, []byte("<"+email+">")) {
				if m := tokenLine.FindSubmatch(b); m != nil {
					token = string(m[1])
				}
			}
		}
		if token == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if token == "" {
		t.Fatalf("no verification mail for %s in %s", email, outbox)
	}
	var verified struct {
		APIKey string `json:"api_key"`
	}
	if _, err := call(t, "POST", baseURL+"/v1/auth/verify", "", map[string]string{"token": token}, &verified); err != nil {
		t.Fatal(err)
	}
	return verified.APIKey
}
