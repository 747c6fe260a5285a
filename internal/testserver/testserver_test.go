package testserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/internal/testserver"
)

func TestStartRegisterStop(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	if !strings.HasPrefix(s.BaseURL, "http://127.0.0.1:") {
		t.Fatalf("BaseURL %q", s.BaseURL)
	}
	// No metrics listener: the default 127.0.0.1:9464 is the machine's,
	// not a test's (it logs "metrics serving", or a warning when taken).
	if log := s.Log(); strings.Contains(log, "metrics serving") || strings.Contains(log, "--metrics-addr") {
		t.Fatalf("a test server opened a metrics listener (or tried the default):\n%s", log)
	}
	key := testserver.Register(t, s.APIURL(), s.DataDir, "ada@example.com")
	if !strings.HasPrefix(key, "eng_") {
		t.Fatalf("api key %q lacks the eng_ prefix", key)
	}
	// A second user in the same outbox must get its own token.
	if key2 := testserver.Register(t, s.BaseURL, s.DataDir, "bob@example.com"); key2 == key {
		t.Fatal("two users got the same key")
	}
	m, err := s.Proc.MemStat()
	if err != nil || m.RSSBytes <= 0 || m.PeakRSSBytes < m.RSSBytes {
		t.Fatalf("MemStat = %+v, %v", m, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.Log())
	}
}

// TestServerIgnoresTheUsersSettings: a user whose environment and
// ~/.engram/config.json select the openai provider still gets servers on
// the built-in local model, because their environment never reaches them.
func TestServerIgnoresTheUsersSettings(t *testing.T) {
	// Find the binary first: its cache lives under the real HOME.
	bin, err := testserver.Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	config := `{"embeddings": {"provider": "openai", "model": "text-embedding-3-large"}}`
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("ENGRAM_HOME", home)
	t.Setenv("ENGRAM_EMBED_PROVIDER", "openai")
	t.Setenv("ENGRAM_EMBED_MODEL", "text-embedding-3-large")
	t.Setenv("ENGRAM_RATE_LIMIT", "0.001")
	t.Setenv("OPENAI_API_KEY", "sk-not-a-real-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")

	s := testserver.Start(t, testserver.Options{Binary: bin})
	key := testserver.Register(t, s.APIURL(), s.DataDir, "ada@example.com")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.APIURL()+"/embeddings/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			DefaultModel string `json:"default_model"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /embeddings/models: %d, %v", resp.StatusCode, err)
	}
	if body.Data.DefaultModel != local.DefaultModelName {
		t.Fatalf("default model %q: the user's settings reached the test server", body.Data.DefaultModel)
	}
}

// TestEnvironCarriesOnlyTheAllowList checks the child environment itself.
func TestEnvironCarriesOnlyTheAllowList(t *testing.T) {
	t.Setenv("ENGRAM_DATA_DIR", "/home/user/.engram/server")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("HOME", "/home/user")
	t.Setenv("PATH", "/usr/bin:/bin")
	env := map[string]string{}
	for _, kv := range testserver.Environ("/tmp/hermetic") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	want := map[string]string{"HOME": "/tmp/hermetic", "ENGRAM_HOME": "/tmp/hermetic", "ENGRAM_METRICS_ADDR": "", "PATH": "/usr/bin:/bin"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	for k := range env {
		if _, ok := want[k]; !ok && (strings.HasPrefix(k, "ENGRAM_") || strings.HasPrefix(k, "OPENAI_")) {
			t.Errorf("%s leaked into the child environment", k)
		}
	}
}

func TestTokenFromMailBody(t *testing.T) {
	tok := "engv_0123456789abcdefghijABCDEFGHIJ0123456789abc"
	tests := []struct {
		name    string
		body    string
		want    string
		wantErr bool
	}{
		{"both", "Hi\n\nhttp://x/v1/auth/verify?token=" + tok + "\n\nor\n\n" + tok + "\n\nbye long words here\n", tok, false},
		{"crlf", "http://x/v1/auth/verify?token=" + tok + "\r\n" + tok + "\r\n", tok, false},
		{"link only", "http://x/v1/auth/verify?token=" + tok + "\n", "", true},
		{"alone only", tok + "\n", "", true},
		{"differ", "http://x/v1/auth/verify?token=" + tok + "\nengv_otherotherotherotherother\n", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testserver.TokenFromMailBody(strings.ReplaceAll(tc.body, "\r\n", "\n"))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer the server's log reader writes to while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLogToGetsTheWholeLog: Log keeps the tail of a long run's log, LogTo
// gets every line, from the startup line on, so a failure late in a long
// run can be traced to a request early in it.
func TestLogToGetsTheWholeLog(t *testing.T) {
	var whole lockedBuffer
	s := testserver.Start(t, testserver.Options{LogTo: &whole})
	const requests = 600 // an access line each, more lines than the tail keeps
	for i := range requests {
		resp, err := http.Get(fmt.Sprintf("%s/v1/memories?n=%d", s.BaseURL, i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.Log())
	}
	got, tail := whole.String(), s.Log()
	if !strings.Contains(got, `msg="engram serving"`) || strings.Contains(tail, `msg="engram serving"`) {
		t.Fatalf("the startup line should be in LogTo's copy and out of the tail:\nLogTo starts %.300q\ntail starts %.300q", got, tail)
	}
	if n := strings.Count(got, "msg=http method=GET path=/v1/memories"); n != requests {
		t.Fatalf("LogTo's copy has %d access lines of the %d requests", n, requests)
	}
	if !strings.HasSuffix(got, tail) {
		t.Fatalf("LogTo's copy does not end with the tail Log keeps:\ncopy ends %q\ntail ends %q", got[max(0, len(got)-300):], tail[max(0, len(tail)-300):])
	}
}
