package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// setupSecret is the API key of the test credentials: it must appear in no
// output or file unless --show-key asks for it.
const setupSecret = "ek_live_setup_test_secret_0123456789"

// setupHome is a private HOME, ENGRAM_HOME, XDG_CONFIG_HOME and CODEX_HOME
// with credentials for https://engram.example.com/v1.
func setupHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	engramDir := filepath.Join(dir, ".engram")
	t.Setenv("HOME", dir)
	t.Setenv("ENGRAM_HOME", engramDir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	t.Setenv("CODEX_HOME", filepath.Join(dir, ".codex"))
	c := &cli{home: engramDir}
	if err := c.writeConfigFile(map[string]any{"cloud": map[string]any{"base_url": "https://engram.example.com/v1"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.saveCredentials(credentials{BaseURL: "https://engram.example.com/v1", UserID: "u1", APIKey: setupSecret}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runSetup runs engram setup in process; it returns stdout, stderr and
// whether the command succeeded.
func runSetup(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := runStackCommand(context.Background(), append([]string{"setup"}, args...), strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// setupCase is one client: its file (under the test's HOME) and how to
// read the engram server and the other servers out of it.
type setupCase struct {
	client string
	file   string // relative to HOME
	// existing holds another server and an unrelated setting.
	existing string
	// others are the names of servers in existing.
	others []string
}

func setupCases() []setupCase {
	jsonExisting := func(key string) string {
		return `{"theme": "dark", "` + key + `": {"github": {"command": "gh-mcp", "args": ["--stdio"]}}, "numbers": [1.50, 2e3]}`
	}
	return []setupCase{
		{"claude-code", ".claude.json", jsonExisting("mcpServers"), []string{"github"}},
		{"claude-desktop", filepath.Join(".config", "Claude", "claude_desktop_config.json"), jsonExisting("mcpServers"), []string{"github"}},
		{"cursor", filepath.Join(".cursor", "mcp.json"), jsonExisting("mcpServers"), []string{"github"}},
		{"vscode", filepath.Join(".config", "Code", "User", "mcp.json"),
			`{"inputs": [{"type": "promptString", "id": "gh-token", "password": true}], "servers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}`,
			[]string{"github"}},
		{"codex", filepath.Join(".codex", "config.toml"),
			"# Codex settings\nmodel = \"o3\"\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\nargs = [\"--stdio\"]\n\n# profiles follow\n[profiles.fast]\nmodel = \"o4-mini\"\n",
			[]string{"github"}},
	}
}

// readServers parses a client's file into its servers by name and the
// whole document.
func readServers(t *testing.T, tc setupCase, raw []byte) (map[string]map[string]any, map[string]any) {
	t.Helper()
	doc := map[string]any{}
	var err error
	if tc.client == "codex" {
		err = toml.Unmarshal(raw, &doc)
	} else {
		err = json.Unmarshal(raw, &doc)
	}
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", tc.file, err, raw)
	}
	key := map[string]string{"codex": "mcp_servers", "vscode": "servers"}[tc.client]
	if key == "" {
		key = "mcpServers"
	}
	servers := map[string]map[string]any{}
	m, _ := doc[key].(map[string]any)
	for name, v := range m {
		servers[name], _ = v.(map[string]any)
	}
	return servers, doc
}

func TestSetupPrintsEachClientsServer(t *testing.T) {
	for _, tc := range setupCases() {
		t.Run(tc.client, func(t *testing.T) {
			setupHome(t)
			stdout, stderr, err := runSetup(t, tc.client, "-s", "claire", "--command", "/opt/engram/bin/engram")
			if err != nil {
				t.Fatalf("setup: %v\n%s", err, stderr)
			}
			servers, _ := readServers(t, tc, []byte(stdout))
			got := servers["engram"]
			if got["command"] != "/opt/engram/bin/engram" || !reflect.DeepEqual(got["args"], []any{"mcp", "-s", "claire"}) {
				t.Fatalf("server = %v, want engram mcp -s claire", got)
			}
			if !strings.Contains(stderr, tc.file) {
				t.Fatalf("stderr %q does not name the client's file %s", stderr, tc.file)
			}
		})
	}
}

func TestSetupHTTPHidesTheKeyUnlessAsked(t *testing.T) {
	const endpoint = "https://engram.example.com/mcp?agent_id=claire"
	// authorization is where each client's file carries the key, and the
	// reference that stands for it when it is hidden.
	cases := []struct {
		client, hiddenRef string
		authorization     func(server map[string]any) string
	}{
		{"claude-code", "Bearer ${ENGRAM_API_KEY}", jsonHeader},
		{"cursor", "Bearer ${env:ENGRAM_API_KEY}", jsonHeader},
		{"vscode", "Bearer ${input:engram-api-key}", jsonHeader},
		{"codex", "env:ENGRAM_API_KEY", func(s map[string]any) string {
			if name, ok := s["bearer_token_env_var"].(string); ok {
				return "env:" + name
			}
			headers, _ := s["http_headers"].(map[string]any)
			v, _ := headers["Authorization"].(string)
			return v
		}},
	}
	for _, tc := range cases {
		for _, show := range []bool{false, true} {
			name := tc.client + "/hidden"
			if show {
				name = tc.client + "/shown"
			}
			t.Run(name, func(t *testing.T) {
				setupHome(t)
				sc := setupCase{client: tc.client}
				args := []string{tc.client, "--http", "-s", "claire"}
				if show {
					args = append(args, "--show-key")
				}
				stdout, stderr, err := runSetup(t, args...)
				if err != nil {
					t.Fatalf("setup: %v\n%s", err, stderr)
				}
				servers, doc := readServers(t, sc, []byte(stdout))
				server := servers["engram"]
				if server["url"] != endpoint {
					t.Fatalf("url = %v, want %s", server["url"], endpoint)
				}
				want := tc.hiddenRef
				if show {
					want = "Bearer " + setupSecret
				}
				if got := tc.authorization(server); got != want {
					t.Fatalf("authorization = %q, want %q", got, want)
				}
				if !show && strings.Contains(stdout+stderr, setupSecret) {
					t.Fatalf("the key was printed without --show-key:\n%s\n%s", stdout, stderr)
				}
				if tc.client == "vscode" {
					inputs, _ := doc["inputs"].([]any)
					if show != (len(inputs) == 0) {
						t.Fatalf("inputs = %v: VS Code prompts for the key exactly when it is hidden", inputs)
					}
				}
			})
		}
	}
}

func jsonHeader(server map[string]any) string {
	headers, _ := server["headers"].(map[string]any)
	v, _ := headers["Authorization"].(string)
	return v
}

func TestSetupWriteMergesKeepsOthersAndIsIdempotent(t *testing.T) {
	for _, tc := range setupCases() {
		t.Run(tc.client, func(t *testing.T) {
			home := setupHome(t)
			path := filepath.Join(home, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.existing), 0o640); err != nil {
				t.Fatal(err)
			}
			args := []string{tc.client, "-s", "claire", "--command", `C:\Program Files\Engram "beta"\engram.exe`, "--write"}
			if _, stderr, err := runSetup(t, args...); err != nil {
				t.Fatalf("setup --write: %v\n%s", err, stderr)
			}
			written, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			servers, doc := readServers(t, tc, written)
			oldServers, oldDoc := readServers(t, tc, []byte(tc.existing))
			for _, other := range tc.others {
				if !reflect.DeepEqual(servers[other], oldServers[other]) {
					t.Fatalf("server %s changed: %v, was %v", other, servers[other], oldServers[other])
				}
			}
			for key, value := range oldDoc {
				if key != "mcpServers" && key != "servers" && key != "mcp_servers" && !reflect.DeepEqual(doc[key], value) {
					t.Fatalf("setting %s changed: %v, was %v", key, doc[key], value)
				}
			}
			if got := servers["engram"]["command"]; got != `C:\Program Files\Engram "beta"\engram.exe` {
				t.Fatalf("command = %v", got)
			}
			backups, _ := filepath.Glob(path + ".*.bak")
			if len(backups) != 1 {
				t.Fatalf("backups = %v, want one", backups)
			}
			if b, _ := os.ReadFile(backups[0]); string(b) != tc.existing {
				t.Fatalf("backup holds %q, want the previous file", b)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
				t.Fatalf("mode = %v, want the file's own 0640", info.Mode().Perm())
			}
			if tc.client == "codex" {
				for _, comment := range []string{"# Codex settings", "# profiles follow"} {
					if !strings.Contains(string(written), comment) {
						t.Fatalf("comment %q lost:\n%s", comment, written)
					}
				}
			}

			// Again: nothing changes, no new backup.
			stdout, stderr, err := runSetup(t, append(args, "--json")...)
			if err != nil {
				t.Fatalf("second setup --write: %v\n%s", err, stderr)
			}
			var res setupWriteResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Changed {
				t.Fatalf("second write = %s (%v), want changed false", stdout, err)
			}
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, written) {
				t.Fatalf("second write changed the file:\n%s\nwas\n%s", again, written)
			}
			if backups, _ := filepath.Glob(path + ".*.bak"); len(backups) != 1 {
				t.Fatalf("backups = %v after an unchanged write, want still one", backups)
			}

			// Another stack replaces the server rather than adding one.
			if _, stderr, err := runSetup(t, tc.client, "-s", "bob", "--command", "engram", "--write"); err != nil {
				t.Fatalf("setup -s bob --write: %v\n%s", err, stderr)
			}
			third, _ := os.ReadFile(path)
			servers, _ = readServers(t, tc, third)
			if len(servers) != len(tc.others)+1 || !reflect.DeepEqual(servers["engram"]["args"], []any{"mcp", "-s", "bob"}) {
				t.Fatalf("servers after re-setup = %v", servers)
			}
		})
	}
}

func TestSetupWriteCreatesAMissingFilePrivately(t *testing.T) {
	for _, tc := range setupCases() {
		t.Run(tc.client, func(t *testing.T) {
			home := setupHome(t)
			if _, stderr, err := runSetup(t, tc.client, "--command", "engram", "--write"); err != nil {
				t.Fatalf("setup --write: %v\n%s", err, stderr)
			}
			path := filepath.Join(home, tc.file)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if servers, _ := readServers(t, tc, raw); servers["engram"]["command"] != "engram" {
				t.Fatalf("servers = %v", servers)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
				t.Fatalf("mode = %v, want 0600", info.Mode().Perm())
			}
		})
	}
}

func TestSetupWriteKeepsALinkedFileLinked(t *testing.T) {
	home := setupHome(t)
	dotfiles := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(dotfiles, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dotfiles, link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runSetup(t, "cursor", "--command", "engram", "--write"); err != nil {
		t.Fatalf("setup --write: %v\n%s", err, stderr)
	}
	if target, err := os.Readlink(link); err != nil || target != dotfiles {
		t.Fatalf("the link now points to %q (%v), want %s", target, err, dotfiles)
	}
	raw, _ := os.ReadFile(dotfiles)
	if servers, _ := readServers(t, setupCase{client: "cursor"}, raw); servers["engram"]["command"] != "engram" {
		t.Fatalf("the linked file holds %s", raw)
	}
}

func TestSetupWriteProjectAndExplicitFile(t *testing.T) {
	cases := []struct {
		client, projectFile string
	}{
		{"claude-code", ".mcp.json"},
		{"cursor", filepath.Join(".cursor", "mcp.json")},
		{"vscode", filepath.Join(".vscode", "mcp.json")},
		{"codex", filepath.Join(".codex", "config.toml")},
	}
	for _, tc := range cases {
		t.Run(tc.client, func(t *testing.T) {
			setupHome(t)
			project := t.TempDir()
			t.Chdir(project)
			if _, stderr, err := runSetup(t, tc.client, "--project", "--command", "engram", "--write"); err != nil {
				t.Fatalf("setup --project --write: %v\n%s", err, stderr)
			}
			if _, err := os.Stat(filepath.Join(project, tc.projectFile)); err != nil {
				t.Fatalf("project file: %v", err)
			}
			explicit := filepath.Join(t.TempDir(), "custom")
			if _, stderr, err := runSetup(t, tc.client, "--file", explicit, "--command", "engram", "--write"); err != nil {
				t.Fatalf("setup --file --write: %v\n%s", err, stderr)
			}
			if _, err := os.Stat(explicit); err != nil {
				t.Fatalf("--file: %v", err)
			}
		})
	}
}

func TestSetupRefusesWhatItCannotMergeAndLeavesTheFile(t *testing.T) {
	cases := []struct {
		name, client, file, existing, wantErr string
	}{
		{"JSON with comments", "vscode", filepath.Join(".config", "Code", "User", "mcp.json"),
			"{\n  // my servers\n  \"servers\": {}\n}\n", "not valid JSON"},
		{"servers that are not an object", "cursor", filepath.Join(".cursor", "mcp.json"),
			`{"mcpServers": []}`, "mcpServers is not a JSON object"},
		{"invalid TOML", "codex", filepath.Join(".codex", "config.toml"),
			"model = \n", "not valid TOML"},
		{"the server as an inline table", "codex", filepath.Join(".codex", "config.toml"),
			"[mcp_servers]\nengram = { command = \"old\" }\n", "cannot replace"},
		{"the server as dotted keys", "codex", filepath.Join(".codex", "config.toml"),
			"mcp_servers.engram.command = \"old\"\n", "cannot replace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := setupHome(t)
			path := filepath.Join(home, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.existing), 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, err := runSetup(t, tc.client, "--command", "engram", "--write")
			if err == nil || !strings.Contains(stderr, tc.wantErr) {
				t.Fatalf("setup = %v, stderr %q; want an error saying %q", err, stderr, tc.wantErr)
			}
			if raw, _ := os.ReadFile(path); string(raw) != tc.existing {
				t.Fatalf("the file changed to %q", raw)
			}
			if backups, _ := filepath.Glob(path + ".*.bak"); len(backups) != 0 {
				t.Fatalf("backups %v for a refused write", backups)
			}
		})
	}
}

func TestSetupUsageErrors(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown client", []string{"emacs"}, "unknown client"},
		{"no client", nil, "wrong number of arguments"},
		{"bad server name", []string{"cursor", "--name", "my server"}, "--name"},
		{"local and cloud", []string{"cursor", "--local", "--cloud"}, "exclude each other"},
		{"show-key without http", []string{"cursor", "--show-key"}, "go with --http"},
		{"claude desktop over http", []string{"claude-desktop", "--http"}, "only local (stdio) servers"},
		{"claude desktop has no project file", []string{"claude-desktop", "--project"}, "no project configuration file"},
		{"insecure remote URL", []string{"cursor", "--http", "--url", "http://engram.example.com"}, "https"},
		{"key for another server", []string{"cursor", "--http", "--url", "https://other.example.com", "--show-key"}, "not https://other.example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setupHome(t)
			stdout, stderr, err := runSetup(t, tc.args...)
			if err == nil || !strings.Contains(stderr, tc.wantErr) {
				t.Fatalf("setup %v = %v, stderr %q; want an error saying %q", tc.args, err, stderr, tc.wantErr)
			}
			if strings.Contains(stdout+stderr, setupSecret) {
				t.Fatal("an error printed the key")
			}
		})
	}
}

func TestMCPURLFromTheAPIBase(t *testing.T) {
	cases := []struct{ base, agent, want string }{
		{"https://engram.example.com/v1", "", "https://engram.example.com/mcp"},
		{"https://engram.example.com/v1/", "claire", "https://engram.example.com/mcp?agent_id=claire"},
		{"https://engram.example.com", "a b", "https://engram.example.com/mcp?agent_id=a+b"},
		{"https://example.com/engram/v1", "", "https://example.com/engram/mcp"},
		{"http://127.0.0.1:8080/v1", "", "http://127.0.0.1:8080/mcp"},
	}
	for _, tc := range cases {
		got, err := mcpURL(tc.base, tc.agent)
		if err != nil || got != tc.want {
			t.Errorf("mcpURL(%q, %q) = %q, %v; want %q", tc.base, tc.agent, got, err, tc.want)
		}
	}
}

func TestCodexTableRoundTripsAnyString(t *testing.T) {
	values := []string{
		`C:\Users\me\engram.exe`, `with "quotes"`, "tab\there", "new\nline", "bell\a", "del\x7f", "ünïcødé ✓", "",
	}
	for _, v := range values {
		spec := mcpServerSpec{name: "engram", command: v, args: []string{"mcp", "-s", v}, env: map[string]string{"ENGRAM_HOME": v, "odd key": v}}
		doc := map[string]any{}
		if err := toml.Unmarshal(codexServerTable(spec), &doc); err != nil {
			t.Fatalf("%q: %v\n%s", v, err, codexServerTable(spec))
		}
		server := serverOf(doc, "engram").(map[string]any)
		env := server["env"].(map[string]any)
		if server["command"] != v || !reflect.DeepEqual(server["args"], []any{"mcp", "-s", v}) || env["ENGRAM_HOME"] != v || env["odd key"] != v {
			t.Fatalf("%q came back as %v", v, server)
		}
	}
}

func TestSetupWriteHTTPKeepsTheKeyOutOfTheFileUnlessAsked(t *testing.T) {
	for _, tc := range setupCases() {
		if tc.client == "claude-desktop" {
			continue // stdio only
		}
		t.Run(tc.client, func(t *testing.T) {
			home := setupHome(t)
			path := filepath.Join(home, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, stderr, err := runSetup(t, tc.client, "--http", "-s", "claire", "--write"); err != nil {
				t.Fatalf("setup --http --write: %v\n%s", err, stderr)
			}
			if raw, _ := os.ReadFile(path); bytes.Contains(raw, []byte(setupSecret)) || !bytes.Contains(raw, []byte("/mcp?agent_id=claire")) {
				t.Fatalf("without --show-key the file holds:\n%s", raw)
			}
			if _, stderr, err := runSetup(t, tc.client, "--http", "-s", "claire", "--show-key", "--write"); err != nil {
				t.Fatalf("setup --http --show-key --write: %v\n%s", err, stderr)
			}
			if raw, _ := os.ReadFile(path); !bytes.Contains(raw, []byte(setupSecret)) {
				t.Fatalf("with --show-key the file lacks the key:\n%s", raw)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
				t.Fatalf("a file holding the key has mode %v, want 0600", info.Mode().Perm())
			}
		})
	}
}
