package cli

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/internal/testserver"
)

// `engram serve --event-store kurrentdb` keeps its log in KurrentDB (here
// the protocol-level test server, over TLS with credentials from the
// environment): a memory written on one node is read on a second node with
// its own data dir, both fed from the one log; the password is never logged;
// credentials in the URL are refused at start.
func TestServeWithKurrentDB(t *testing.T) {
	t.Parallel()
	tlsConf, err := kurrentdbtest.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	const password = "kurrent-e2e-secret"
	ksrv, err := kurrentdbtest.Start(kurrentdbtest.Options{Username: "engram", Password: password, TLS: tlsConf})
	if err != nil {
		t.Fatal(err)
	}
	defer ksrv.Close()
	env := []string{"ENGRAM_KURRENTDB_USERNAME=engram", "ENGRAM_KURRENTDB_PASSWORD=" + password}
	args := []string{"--embed-model", "engram-hash-384", "--event-store", "kurrentdb", "--event-store-url", ksrv.URL()}

	dataDir := t.TempDir()
	one := startServer(t, dataDir, env, args...)
	key := testserver.Register(t, one.BaseURL, dataDir, "kurrent@example.com")
	var created struct {
		ID string `json:"id"`
	}
	if status, err := call(t, "POST", one.BaseURL+"/v1/memories", key, map[string]any{"agent_id": "claire", "type": "note",
		"content": map[string]string{"content": "the release train leaves on tuesdays"}}, &created); err != nil || status != 201 {
		t.Fatalf("create: %d %v", status, err)
	}
	if streams := strings.Join(ksrv.Streams(), " "); !strings.Contains(streams, "engram.") {
		t.Fatalf("KurrentDB streams = %s, want Engram's under the engram. prefix", streams)
	}

	two := startServer(t, t.TempDir(), env, args...)
	var got struct {
		ID      string            `json:"id"`
		Content map[string]string `json:"content"`
	}
	waitUntil(t, func() bool {
		status, _ := call(t, "GET", two.BaseURL+"/v1/memories/"+created.ID, key, nil, &got)
		return status == 200
	})
	if got.ID != created.ID || got.Content["content"] != "the release train leaves on tuesdays" {
		t.Fatalf("second node read %+v", got)
	}
	for _, p := range []*testserver.Server{one, two} {
		if strings.Contains(p.Log(), password) {
			t.Fatal("the server log holds the KurrentDB password")
		}
	}

	// Credentials in the URL are refused, on the command line (by the flag
	// check) and in ENGRAM_EVENT_STORE_URL (by the adapter) alike.
	withUser := strings.Replace(ksrv.URL(), "kurrentdb://", "kurrentdb://engram:"+password+"@", 1)
	for _, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"command line", []string{"--event-store-url", withUser}, nil},
		{"environment", nil, []string{"ENGRAM_EVENT_STORE_URL=" + withUser}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binPath, append([]string{"serve", "--data-dir", t.TempDir(), "--event-store", "kurrentdb"}, c.args...)...)
		cmd.Env = append(testserver.Environ(t.TempDir()), c.env...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "ENGRAM_KURRENTDB_PASSWORD") || strings.Contains(string(out), password) {
			t.Fatalf("serve with credentials in the URL on the %s: %v\n%s\nwant a refusal naming the environment variables, without the password", c.name, err, out)
		}
	}
}
