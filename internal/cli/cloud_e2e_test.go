package cli

import (
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// startCloud runs `engram serve` on a loopback port with its own
// ENGRAM_HOME, as the cloud of the CLI tests. The launcher starts from the
// test's environment, so every variable the server reads from it is
// overridden here: the developer's settings never reach the test.
func startCloud(t *testing.T) *testserver.Server {
	t.Helper()
	env := []string{"ENGRAM_HOME=" + t.TempDir(), "OPENAI_API_KEY=", "OPENAI_BASE_URL="}
	var cfg serveConfig
	serveFlags(&cfg).VisitAll(func(f *flag.Flag) {
		switch f.Name {
		case "addr", "data-dir":
		case "metrics-addr": // the default port is taken by any other engram serve on the machine
			env = append(env, envName(f.Name)+"=127.0.0.1:0")
		default:
			env = append(env, envName(f.Name)+"="+f.DefValue)
		}
	})
	return startServer(t, t.TempDir(), env)
}

var verifyToken = regexp.MustCompile(`(?m)^(engv_[A-Za-z0-9]+)\r?$`)

// mailedToken waits for the verification mail in the cloud's outbox and
// returns its token.
func mailedToken(t *testing.T, srv *testserver.Server) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(srv.OutboxDir(), "*.eml"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if m := verifyToken.FindSubmatch(raw); m != nil {
				return string(m[1])
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no verification mail in %s", srv.OutboxDir())
	return ""
}

// loginCLI configures h for the cloud and registers and verifies an
// account through the command line; it returns the API key.
func loginCLI(t *testing.T, h *cliHome, srv *testserver.Server, email string) string {
	t.Helper()
	h.ok("config", "set", "cloud.base_url", srv.APIURL())
	reg := h.object("auth", "register", "--email", email)
	assertShape(t, "auth register", reg, "user_id", "message")
	verified := h.object("auth", "verify", mailedToken(t, srv))
	assertShape(t, "auth verify", verified, "user_id", "verified", "api_key")
	return verified["api_key"].(string)
}

func TestCLISearchLocal(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	id := h.object("belief", "--statement", "deploy-v2.4.7-hotfix broke the login page", "--tag", "ops")["id"].(string)
	h.ok("note", "--content", "lunch is at noon")

	out := h.object("search", "what broke login?")
	assertShape(t, "search", out, "results", "total", "query_time_ms", "query_time_us", "open_ms", "source")
	if out["source"] != "local" || out["total"] != 2.0 {
		t.Fatalf("search = %v", out)
	}
	first := out["results"].([]any)[0]
	assertShape(t, "search result", first, "type", "id", "score", "content", "created_at", "strength", "forgotten", "source")
	if first.(map[string]any)["id"] != id {
		t.Fatalf("best result %v, want the belief %s", first, id)
	}
	// A forgotten memory is found with --include-forgotten only, flagged.
	lunch := h.object("note", "--content", "the picnic is on friday")["id"].(string)
	h.ok("forget", lunch)
	if n := len(h.object("search", "picnic friday", "--mode", "keyword")["results"].([]any)); n != 0 {
		t.Fatalf("search finds a forgotten memory: %d results", n)
	}
	found := h.object("search", "picnic friday", "--mode", "keyword", "--include-forgotten")["results"].([]any)
	if len(found) != 1 || found[0].(map[string]any)["id"] != lunch || found[0].(map[string]any)["forgotten"] != true {
		t.Fatalf("--include-forgotten = %v, want the forgotten note %s", found, lunch)
	}
	if n := len(h.object("search", "login", "--tag", "ops", "--type", "beliefs", "--mode", "keyword", "--min-score", "0.01")["results"].([]any)); n != 1 {
		t.Fatalf("filtered search: %d results, want 1", n)
	}
	if n := len(h.object("search", "login", "--before", "2000-01-01T00:00:00Z")["results"].([]any)); n != 0 {
		t.Fatalf("--before 2000: %d results", n)
	}
	plain := h.ok("search", "login").stdout
	if !strings.HasPrefix(plain, "SCORE") || !strings.Contains(plain, "deploy-v2.4.7-hotfix broke the login page") {
		t.Fatalf("plain search:\n%s", plain)
	}
	for _, bad := range [][]string{
		{"search", "x", "--mode", "fuzzy"}, {"search", "x", "--limit", "0"}, {"search", "x", "--min-score", "2"},
		{"search", "x", "--type", "drives"}, {"search", "x", "--after", "monday"},
	} {
		h.fails(1, "", bad...)
	}
	// A bound before 1970 is refused as the API refuses it, not taken as
	// none (Go's zero time is the open bound).
	for _, bad := range [][]string{
		{"search", "login", "--before", "0001-01-01T00:00:00Z"}, {"search", "login", "--after", "1969-12-31T23:59:59Z"},
	} {
		if r := h.fails(1, "", bad...); !strings.Contains(r.stderr, "of the year 1970 or later") {
			t.Fatalf("engram %s: stderr %q, want the 1970 refusal", strings.Join(bad, " "), r.stderr)
		}
	}
	h.fails(2, "", "search")
	h.fails(2, "", "search", "x", "--local", "--cloud")
	h.fails(1, "", "search", "x", "--cloud") // no cloud configured
}

func TestCLISearchUsesTheCloudAndFallsBack(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	h := newCLIHome(t)
	key := loginCLI(t, h, srv, "search@example.com")

	// A memory only the cloud has, written through the API by another machine.
	api := client.New(srv.APIURL(), key)
	cloudMem, err := api.CreateMemory(context.Background(), client.CreateMemoryRequest{
		AgentID: "default", Type: "notes", Content: client.NoteContent{Content: "the release train leaves on friday"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A memory captured here and never pushed.
	localID := h.object("note", "--content", "the release needs a changelog")["id"].(string)

	sources := func(out map[string]any) map[string]string {
		got := map[string]string{}
		for _, r := range out["results"].([]any) {
			got[r.(map[string]any)["id"].(string)] = r.(map[string]any)["source"].(string)
		}
		return got
	}

	both := h.object("search", "release")
	if both["source"] != "cloud+local" || !jsonEqual(sources(both), map[string]string{cloudMem.ID: "cloud", localID: "local"}) {
		t.Fatalf("cloud search with an unpushed local memory = %v", both)
	}
	if got := sources(h.object("search", "release", "--cloud")); !jsonEqual(got, map[string]string{cloudMem.ID: "cloud"}) {
		t.Fatalf("--cloud = %v", got)
	}
	if got := sources(h.object("search", "release", "--local")); !jsonEqual(got, map[string]string{localID: "local"}) {
		t.Fatalf("--local = %v", got)
	}

	// The cloud stops: the same command answers from the local stack and says why.
	srv.Kill()
	r := h.fails(0, "", "search", "release")
	if !strings.Contains(r.stderr, "cloud unreachable (") || !strings.Contains(r.stderr, "searched the local stack") || !strings.Contains(r.stdout, localID) {
		t.Fatalf("fallback: stdout %q stderr %q", r.stdout, r.stderr)
	}
	fallback := h.object("search", "release")
	if fallback["source"] != "local" || !strings.Contains(fallback["fallback_reason"].(string), "connection refused") {
		t.Fatalf("fallback --json = %v", fallback)
	}
	if quiet := h.fails(0, "", "search", "release", "--quiet"); quiet.stderr != "" {
		t.Fatalf("--quiet printed %q", quiet.stderr)
	}
	forced := h.fails(3, "", "search", "release", "--cloud")
	if !strings.Contains(forced.stderr, "cloud unreachable") {
		t.Fatalf("--cloud with the cloud down: %q", forced.stderr)
	}
}

func TestCLISearchFallsBackOnTimeoutAndRejectedKey(t *testing.T) {
	t.Parallel()
	// A cloud that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	h := newCLIHome(t)
	h.ok("note", "--content", "kept locally")
	base := "http://" + ln.Addr().String() + "/v1"
	h.ok("config", "set", "cloud.base_url", base)
	writeCredentials(t, h, base, "eng_0000000000000000000000000000000000000000")

	start := time.Now()
	out := h.object("search", "kept", "--timeout", "300ms")
	if out["source"] != "local" || !strings.Contains(out["fallback_reason"].(string), "no answer within 300ms") {
		t.Fatalf("timeout fallback = %v", out)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the search took %s despite --timeout 300ms", took)
	}
	h.ok("config", "set", "cloud.timeout", "200ms")
	if out := h.object("search", "kept"); !strings.Contains(out["fallback_reason"].(string), "no answer within 200ms") {
		t.Fatalf("cloud.timeout not used: %v", out)
	}
	h.fails(3, "", "search", "kept", "--cloud")

	// A real cloud that does not know the key: 401 falls back too.
	srv := startCloud(t)
	h.ok("config", "set", "cloud.base_url", srv.APIURL())
	writeCredentials(t, h, srv.APIURL(), "eng_0000000000000000000000000000000000000000")
	rejected := h.object("search", "kept")
	if rejected["source"] != "local" || !strings.Contains(rejected["fallback_reason"].(string), "401") {
		t.Fatalf("401 fallback = %v", rejected)
	}
	h.fails(1, "", "search", "kept", "--cloud") // rejected credentials are not "unreachable"

	// A base URL without /v1 is a configuration error, not an empty cloud.
	h.ok("config", "set", "cloud.base_url", srv.BaseURL)
	writeCredentials(t, h, srv.BaseURL, "eng_0000000000000000000000000000000000000000")
	if r := h.fails(1, "", "search", "kept"); !strings.Contains(r.stderr, "does it end in /v1?") {
		t.Fatalf("base URL without /v1: %q", r.stderr)
	}
}

// writeCredentials stores a key for base as auth login would.
func writeCredentials(t *testing.T, h *cliHome, base, key string) {
	t.Helper()
	raw := `{"base_url": "` + base + `", "user_id": "u", "api_key": "` + key + `"}`
	if err := os.WriteFile(filepath.Join(h.dir, "credentials.json"), []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCLIAccountAndKeys(t *testing.T) {
	t.Parallel()
	srv := startCloud(t)
	h := newCLIHome(t)
	key := loginCLI(t, h, srv, "keys@example.com")
	credPath := filepath.Join(h.dir, "credentials.json")
	info, err := os.Stat(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials.json mode %04o, want 0600", info.Mode().Perm())
	}

	status := h.object("auth", "status")
	assertShape(t, "auth status", status, "base_url", "logged_in", "key_prefix", "reachable", "account")
	if status["logged_in"] != true || status["account"].(map[string]any)["email"] != "keys@example.com" {
		t.Fatalf("auth status = %v", status)
	}
	if plain := h.ok("auth", "status").stdout; strings.Contains(plain, key) {
		t.Fatalf("auth status shows the full key:\n%s", plain)
	}

	created := h.object("keys", "create", "laptop")
	assertShape(t, "keys create", created, "id", "name", "key", "prefix", "created_at")
	list := h.object("keys", "list")
	assertShape(t, "keys list", list, "keys")
	keys := list["keys"].([]any)
	if len(keys) != 2 {
		t.Fatalf("keys = %v", keys)
	}
	assertShape(t, "key", keys[0], "id", "name", "prefix", "created_at", "last_used_at", "is_active")
	if plain := h.ok("keys", "list").stdout; strings.Contains(plain, key) || strings.Contains(plain, created["key"].(string)) {
		t.Fatalf("keys list shows a full key:\n%s", plain)
	}
	firstID := keys[0].(map[string]any)["id"].(string)
	laptopID := created["id"].(string)

	h.fails(1, "n\n", "keys", "revoke", laptopID)
	revoked := h.object("keys", "revoke", laptopID, "--yes")
	assertShape(t, "keys revoke", revoked, "id", "revoked", "revoked_at")
	h.fails(1, "", "keys", "revoke", laptopID, "--yes") // already revoked: 409

	// Cycling the key this machine uses saves the new one.
	cycled := h.object("keys", "cycle", firstID, "--yes")
	assertShape(t, "keys cycle", cycled, "old_key_id", "old_key_revoked", "new_key_id", "new_key", "new_key_prefix")
	raw, err := os.ReadFile(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), cycled["new_key"].(string)) || strings.Contains(string(raw), key) {
		t.Fatal("credentials.json does not hold the cycled key")
	}
	h.ok("keys", "list") // still logged in with the new key

	// Log in again with a key from a file and from stdin; never from a flag.
	newKey := cycled["new_key"].(string)
	if out := h.object("auth", "logout"); !jsonEqual(out, map[string]any{"logged_out": true}) {
		t.Fatalf("auth logout = %v", out)
	}
	if _, err := os.Stat(credPath); !os.IsNotExist(err) {
		t.Fatalf("logout left credentials.json: %v", err)
	}
	h.fails(1, "", "keys", "list")
	if out := h.object("auth", "logout"); !jsonEqual(out, map[string]any{"logged_out": false}) {
		t.Fatalf("second auth logout = %v", out)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(newKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	login := h.object("auth", "login", "--api-key-file", keyFile)
	assertShape(t, "auth login", login, "base_url", "user_id", "email", "key_prefix")
	h.object("auth", "logout")
	if r := h.run(newKey+"\n", "auth", "login"); r.code != 0 || strings.Contains(r.stdout+r.stderr, newKey) {
		t.Fatalf("login from stdin: exit %d, output %q %q", r.code, r.stdout, r.stderr)
	}
	h.fails(2, "", "auth", "login", "--api-key", newKey)
	h.fails(1, "eng_notakey\n", "auth", "login")

	// A credentials file others can read is refused.
	if err := os.Chmod(credPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := h.fails(1, "", "keys", "list"); !strings.Contains(r.stderr, "chmod 600") {
		t.Fatalf("mode 0644 credentials: %q", r.stderr)
	}
}

func TestCLIRefusesCredentialsOverPlainHTTPToOtherHosts(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	for _, url := range []string{"http://localhost.evil.example/v1", "http://10.0.0.1:8080/v1", "http://127.0.0.1.nip.io/v1", "ftp://127.0.0.1/v1"} {
		if r := h.fails(1, "", "config", "set", "cloud.base_url", url); !strings.Contains(r.stderr, "cloud.base_url") {
			t.Fatalf("%s: %q", url, r.stderr)
		}
	}
	h.ok("config", "set", "cloud.base_url", "https://engram.example.com/v1")
	h.ok("config", "set", "cloud.base_url", "http://[::1]:9/v1")
	h.ok("config", "set", "cloud.base_url", "http://localhost:9/v1")

	// A hand-edited config.json is held to the same rule before any request.
	if err := os.WriteFile(filepath.Join(h.dir, "config.json"), []byte(`{"cloud": {"base_url": "http://localhost.evil.example/v1"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("eng_0000000000000000000000000000000000000000"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.fails(1, "", "auth", "login", "--api-key-file", keyFile)
	if !strings.Contains(r.stderr, "https") {
		t.Fatalf("login to a non-loopback http URL: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "credentials.json")); !os.IsNotExist(err) {
		t.Fatal("credentials were saved for a non-loopback http URL")
	}
}

func TestCLIConfig(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t)
	list := h.object("config", "list")
	assertShape(t, "config list", list, "settings")
	assertShape(t, "settings", list["settings"], "embeddings.provider", "embeddings.model", "cloud.base_url", "cloud.timeout", "sync.raw")
	h.ok("config", "set", "embeddings.model", "engram-hash-384")
	got := h.object("config", "get", "embeddings.model")
	assertShape(t, "config get", got, "key", "value")
	if got["value"] != "engram-hash-384" {
		t.Fatalf("get = %v", got)
	}
	cases := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"config", "set", "embeddings.provider", "cohere"}, 1, "must be local or openai"},
		{[]string{"config", "set", "cloud.timeout", "soon"}, 1, "must be a duration"},
		{[]string{"config", "set", "cloud.timeout", "0s"}, 1, "must be a duration"},
		{[]string{"config", "set", "cloud.colour", "blue"}, 1, "the settings are embeddings.provider, embeddings.model, cloud.base_url, cloud.timeout, sync.raw"},
		{[]string{"config", "get", "cloud.timeout"}, 1, "not set"},
		{[]string{"config", "set", "cloud.timeout"}, 2, "wrong number of arguments"},
		{[]string{"config", "frobnicate"}, 2, "unknown subcommand"},
	}
	for _, tc := range cases {
		if r := h.fails(tc.code, "", tc.args...); !strings.Contains(r.stderr, tc.inStderr) {
			t.Fatalf("%v: stderr %q lacks %q", tc.args, r.stderr, tc.inStderr)
		}
	}
	h.ok("config", "unset", "embeddings.model")
	if v := h.object("config", "list")["settings"].(map[string]any)["embeddings.model"]; v != nil {
		t.Fatalf("unset left %v", v)
	}
	// The stack embeds with the configured provider and model, like serve.
	h.ok("config", "set", "embeddings.model", "no-such-model")
	if r := h.fails(1, "", "note", "--content", "x"); !strings.Contains(r.stderr, "no-such-model") {
		t.Fatalf("a stack ignored embeddings.model: %q", r.stderr)
	}
}
