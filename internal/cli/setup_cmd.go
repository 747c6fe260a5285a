package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
)

// mcpKeyEnv is the environment variable a client's configuration names
// instead of the API key itself.
const mcpKeyEnv = "ENGRAM_API_KEY"

// vscodeKeyInput is the id of the VS Code input that prompts for the key
// once and keeps it in VS Code's secret storage.
const vscodeKeyInput = "engram-api-key"

// mcpServerNamePattern is what every client accepts as a server name (VS
// Code's schema is the strictest: a letter, then letters, digits, _ or -),
// compiled at first use, not at every process start (every command of the command line is one).
var mcpServerNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`) })

// mcpServerSpec is the Engram MCP server one client is told about: a local
// process speaking stdio, or the server's /mcp over streamable HTTP.
type mcpServerSpec struct {
	name string
	// stdio
	command string
	args    []string
	env     map[string]string
	// streamable HTTP
	url string
	key string // the API key itself (--show-key); "" names mcpKeyEnv instead
}

func (s mcpServerSpec) http() bool { return s.url != "" }

// authorization is the Authorization header with the key or, hidden, the
// client's own reference to it (ref).
func (s mcpServerSpec) authorization(ref string) string {
	if s.key != "" {
		return "Bearer " + s.key
	}
	return "Bearer " + ref
}

// mcpClientConfig is one MCP client's configuration file: where it lives,
// how servers are written in it.
type mcpClientConfig struct {
	name, title string
	// userFile is the file for every project of the user; projectFile,
	// relative to the working directory, the one for a project ("" when the
	// client has none).
	userFile    func() (string, error)
	projectFile string
	toml        bool
	// serversKey is the JSON object that maps names to servers.
	serversKey string
	// entry is the server's value under serversKey (JSON clients), with the
	// inputs the file must declare for it (VS Code).
	entry func(s mcpServerSpec) (entry map[string]any, inputs []map[string]any, err error)
}

func homeFile(parts ...string) func() (string, error) {
	return func() (string, error) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(append([]string{home}, parts...)...), nil
	}
}

// userConfigFile is under the platform's user configuration directory:
// ~/Library/Application Support on macOS, %AppData% on Windows,
// $XDG_CONFIG_HOME or ~/.config elsewhere.
func userConfigFile(parts ...string) func() (string, error) {
	return func() (string, error) {
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(append([]string{dir}, parts...)...), nil
	}
}

// codexConfigFile is $CODEX_HOME/config.toml, by default ~/.codex/config.toml.
func codexConfigFile() (string, error) {
	if dir := os.Getenv("CODEX_HOME"); dir != "" {
		return filepath.Join(dir, "config.toml"), nil
	}
	return homeFile(".codex", "config.toml")()
}

// stdioEntry is the command-args-env object every JSON client reads.
func stdioEntry(s mcpServerSpec, withType bool) map[string]any {
	e := map[string]any{"command": s.command, "args": s.args}
	if withType {
		e["type"] = "stdio"
	}
	if len(s.env) > 0 {
		e["env"] = s.env
	}
	return e
}

// mcpClientConfigs are the clients engram setup knows, with the file and
// format each reads (docs/mcp.md "Clients").
func mcpClientConfigs() []mcpClientConfig {
	return []mcpClientConfig{
		{
			name: "claude-code", title: "Claude Code",
			// User scope; Claude Code expands ${VAR} in command, args, env,
			// url and headers.
			userFile: homeFile(".claude.json"), projectFile: ".mcp.json", serversKey: "mcpServers",
			entry: func(s mcpServerSpec) (map[string]any, []map[string]any, error) {
				if !s.http() {
					return stdioEntry(s, true), nil, nil
				}
				return map[string]any{"type": "http", "url": s.url, "headers": map[string]string{"Authorization": s.authorization("${" + mcpKeyEnv + "}")}}, nil, nil
			},
		},
		{
			name: "claude-desktop", title: "Claude Desktop",
			userFile: userConfigFile("Claude", "claude_desktop_config.json"), serversKey: "mcpServers",
			entry: func(s mcpServerSpec) (map[string]any, []map[string]any, error) {
				if s.http() {
					return nil, nil, usageErrorf("setup claude-desktop: Claude Desktop's configuration file holds only local (stdio) servers; " +
						"run engram setup claude-desktop --cloud (engram mcp --cloud reaches the server with the CLI's credentials, so no key is written), " +
						"or add the server's /mcp URL as a custom connector in Claude Desktop's settings")
				}
				return stdioEntry(s, false), nil, nil
			},
		},
		{
			name: "cursor", title: "Cursor",
			// Cursor expands ${env:NAME} in mcp.json.
			userFile: homeFile(".cursor", "mcp.json"), projectFile: filepath.Join(".cursor", "mcp.json"), serversKey: "mcpServers",
			entry: func(s mcpServerSpec) (map[string]any, []map[string]any, error) {
				if !s.http() {
					return stdioEntry(s, false), nil, nil
				}
				return map[string]any{"url": s.url, "headers": map[string]string{"Authorization": s.authorization("${env:" + mcpKeyEnv + "}")}}, nil, nil
			},
		},
		{
			name: "vscode", title: "VS Code",
			userFile: userConfigFile("Code", "User", "mcp.json"), projectFile: filepath.Join(".vscode", "mcp.json"), serversKey: "servers",
			entry: func(s mcpServerSpec) (map[string]any, []map[string]any, error) {
				if !s.http() {
					return stdioEntry(s, true), nil, nil
				}
				e := map[string]any{"type": "http", "url": s.url, "headers": map[string]string{"Authorization": s.authorization("${input:" + vscodeKeyInput + "}")}}
				if s.key != "" {
					return e, nil, nil
				}
				// VS Code asks once and keeps the answer in its secret storage.
				return e, []map[string]any{{"type": "promptString", "id": vscodeKeyInput, "description": "Engram API key (engram keys create NAME prints one)", "password": true}}, nil
			},
		},
		{
			name: "codex", title: "Codex",
			userFile: codexConfigFile, projectFile: filepath.Join(".codex", "config.toml"), toml: true,
		},
	}
}

func lookupMCPClient(name string) (mcpClientConfig, error) {
	var names []string
	for _, cl := range mcpClientConfigs() {
		if cl.name == name {
			return cl, nil
		}
		names = append(names, cl.name)
	}
	return mcpClientConfig{}, usageErrorf("setup: unknown client %q; the clients are %s", name, strings.Join(names, ", "))
}

func setupCommand(ctx context.Context, c *cli, args []string) error {
	var clients []string
	for _, cl := range mcpClientConfigs() {
		clients = append(clients, cl.name)
	}
	fs := c.flags("setup", "CLIENT [--http] [--write] [flags]",
		"Print the configuration that adds Engram as an MCP server to CLIENT ("+strings.Join(clients, ", ")+"); "+
			"--write merges it into the client's configuration file, keeping a backup and every other server. "+
			"By default the client starts engram mcp -s STACK (stdio); --http points it at the server's /mcp instead, "+
			"with the API key of engram auth login as a Bearer header that names $"+mcpKeyEnv+" (or a VS Code prompt) unless --show-key.")
	write := fs.Bool("write", false, "merge the configuration into the client's file (a backup is kept)")
	project := fs.Bool("project", false, "use the client's file for the project in the working directory (.mcp.json, .cursor/mcp.json, .vscode/mcp.json, .codex/config.toml)")
	file := fs.String("file", "", "the client's configuration file, instead of its usual place")
	name := fs.String("name", "engram", "the server's name in the client's configuration")
	httpMode := fs.Bool("http", false, "connect over streamable HTTP to the server's /mcp rather than starting engram mcp")
	serverURL := fs.String("url", "", "with --http: the server (e.g. https://engram.example.com); default cloud.base_url")
	showKey := fs.Bool("show-key", false, "with --http: write the API key itself instead of a reference to $"+mcpKeyEnv)
	command := fs.String("command", "", "the engram executable the client starts (default: this one)")
	forceCloud := fs.Bool("cloud", false, "stdio: engram mcp --cloud (the cloud agent, with the CLI's credentials)")
	forceLocal := fs.Bool("local", false, "stdio: engram mcp --local (the local stack even when a cloud is configured)")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	target, err := lookupMCPClient(pos[0])
	if err != nil {
		return err
	}
	switch {
	case !mcpServerNamePattern().MatchString(*name):
		return usageErrorf("setup: --name %q: a letter, then letters, digits, _ or - (at most 64)", *name)
	case *forceCloud && *forceLocal:
		return usageErrorf("setup: --local and --cloud exclude each other")
	case *httpMode && (*forceCloud || *forceLocal):
		return usageErrorf("setup: --http connects to the server itself; --local and --cloud choose what engram mcp serves")
	case !*httpMode && (*showKey || *serverURL != ""):
		return usageErrorf("setup: --show-key and --url go with --http")
	case *project && *file != "":
		return usageErrorf("setup: --project and --file exclude each other")
	case *project && target.projectFile == "":
		return usageErrorf("setup: %s has no project configuration file", target.title)
	}

	spec := mcpServerSpec{name: *name}
	if *httpMode {
		if spec.url, spec.key, err = c.mcpEndpoint(*serverURL, *showKey); err != nil {
			return err
		}
	} else {
		if spec.command, err = setupExecutable(*command); err != nil {
			return err
		}
		spec.args = []string{"mcp", "-s", c.stackName()}
		if *forceCloud {
			spec.args = append(spec.args, "--cloud")
		}
		if *forceLocal {
			spec.args = append(spec.args, "--local")
		}
		if os.Getenv("ENGRAM_HOME") != "" {
			// The client's environment may not have it: without it engram
			// mcp would serve ~/.engram's stacks.
			spec.env = map[string]string{"ENGRAM_HOME": c.home}
		}
	}

	path := *file
	switch {
	case path != "":
	case *project:
		path = target.projectFile
	default:
		if path, err = target.userFile(); err != nil {
			return fmt.Errorf("setup: where %s keeps its configuration: %w", target.title, err)
		}
	}

	if !*write {
		snippet, err := target.snippet(spec)
		if err != nil {
			return err
		}
		if _, err := c.stdout.Write(snippet); err != nil {
			return err
		}
		c.notice("# %s reads this from %s; engram setup %s --write merges it there.", target.title, path, target.name)
		c.setupKeyNotice(spec, target)
		return nil
	}
	res, err := target.writeTo(path, spec, time.Now())
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(res)
	}
	switch {
	case !res.Changed:
		fmt.Fprintf(c.stdout, "%s: server %q already up to date in %s\n", target.title, spec.name, res.File)
	case res.Backup != "":
		fmt.Fprintf(c.stdout, "%s: server %q written to %s (previous file kept as %s)\n", target.title, spec.name, res.File, res.Backup)
	default:
		fmt.Fprintf(c.stdout, "%s: server %q written to %s (new file)\n", target.title, spec.name, res.File)
	}
	c.setupKeyNotice(spec, target)
	c.notice("Restart %s (or reload its MCP servers) to pick it up.", target.title)
	return nil
}

// setupKeyNotice says how a hidden key reaches the client.
func (c *cli) setupKeyNotice(spec mcpServerSpec, client mcpClientConfig) {
	if !spec.http() || spec.key != "" {
		return
	}
	if client.name == "vscode" {
		c.notice("# VS Code asks for the API key the first time it starts the server and keeps it in its secret storage.")
		return
	}
	c.notice("# The key is not in the file: start %s with %s set, e.g. export %s=\"$(jq -r .api_key %s)\"", client.title, mcpKeyEnv, mcpKeyEnv, c.credentialsPath())
}

// setupExecutable is the engram executable a client starts: the one asked
// for, else this one, as an absolute path (clients start servers with a
// minimal PATH).
func setupExecutable(command string) (string, error) {
	if command != "" {
		return command, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("setup: where this engram is (give --command): %w", err)
	}
	return exe, nil
}

// mcpEndpoint is the /mcp URL of the server (serverURL, else the configured
// cloud), bound to the stack when one was named, and the API key when it
// is to be shown.
func (c *cli) mcpEndpoint(serverURL string, showKey bool) (endpoint, key string, err error) {
	cl, err := c.loadCloud()
	if err != nil {
		return "", "", err
	}
	base := cl.settings.baseURL
	if serverURL != "" {
		base = serverURL
	}
	endpoint, err = mcpURL(base, c.stack)
	if err != nil {
		return "", "", err
	}
	if !showKey {
		return endpoint, "", nil
	}
	if err := cl.requireLogin(); err != nil {
		return "", "", err
	}
	if keyFor, _ := mcpURL(cl.creds.BaseURL, c.stack); keyFor != endpoint {
		return "", "", domain.Invalid("url", "the stored API key is for %s, not %s: run engram auth login against that server first", cl.creds.BaseURL, base)
	}
	return endpoint, cl.creds.APIKey, nil
}

// mcpURL turns an API base URL (…/v1 or the server's root) into the
// server's /mcp endpoint, bound to agent when one is named.
func mcpURL(base, agent string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", domain.Invalid("url", "%q is not an http(s)://host[:port] URL", base)
	}
	if !client.SecureBaseURL(u.String()) {
		return "", insecureURLError(base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1") + "/mcp"
	u.RawQuery, u.Fragment = "", ""
	if agent != "" {
		u.RawQuery = url.Values{"agent_id": {agent}}.Encode()
	}
	return u.String(), nil
}

// snippet is what the configuration file should hold for the server, as
// the client writes it.
func (cl mcpClientConfig) snippet(s mcpServerSpec) ([]byte, error) {
	if cl.toml {
		return codexServerTable(s), nil
	}
	entry, inputs, err := cl.entry(s)
	if err != nil {
		return nil, err
	}
	doc := map[string]any{cl.serversKey: map[string]any{s.name: entry}}
	if len(inputs) > 0 {
		doc["inputs"] = inputs
	}
	return marshalIndent(doc)
}

// setupWriteResult is what --write did.
type setupWriteResult struct {
	File    string `json:"file"`
	Backup  string `json:"backup,omitempty"`
	Changed bool   `json:"changed"`
}

// writeTo merges the server into the file at path: every other server and
// setting stays, an existing file is first copied to a timestamped backup,
// and a file that would not change is left alone.
func (cl mcpClientConfig) writeTo(path string, s mcpServerSpec, now time.Time) (setupWriteResult, error) {
	// A configuration file kept elsewhere and linked in (dotfiles) is
	// written where it is, so the link stays.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	res := setupWriteResult{File: path}
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, err
	}
	var merged []byte
	if cl.toml {
		merged, err = mergeCodexServer(old, s)
	} else {
		merged, err = cl.mergeJSON(old, s)
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	if exists && bytes.Equal(old, merged) {
		return res, nil
	}
	mode := os.FileMode(0o600)
	if exists {
		info, err := os.Stat(path)
		if err != nil {
			return res, err
		}
		mode = info.Mode().Perm()
		if s.key != "" {
			mode &^= 0o077 // the API key goes in: for its owner's eyes only
		}
		res.Backup = fmt.Sprintf("%s.%s.bak", path, now.UTC().Format("20060102T150405.000Z"))
		if err := os.WriteFile(res.Backup, old, mode); err != nil {
			return res, fmt.Errorf("backup of %s: %w", path, err)
		}
	}
	if err := writeFileAtomic(path, merged, mode); err != nil {
		return res, err
	}
	res.Changed = true
	return res, nil
}

// mergeJSON sets the server in a JSON configuration, keeping the order and
// values of everything else.
func (cl mcpClientConfig) mergeJSON(old []byte, s mcpServerSpec) ([]byte, error) {
	entry, inputs, err := cl.entry(s)
	if err != nil {
		return nil, err
	}
	doc, err := parseObject(old, "the file")
	if err != nil {
		return nil, err
	}
	servers, err := parseObject(doc.get(cl.serversKey), cl.serversKey)
	if err != nil {
		return nil, err
	}
	if err := servers.set(s.name, entry); err != nil {
		return nil, err
	}
	if err := doc.setRaw(cl.serversKey, servers.encode()); err != nil {
		return nil, err
	}
	if len(inputs) > 0 {
		merged, err := mergeInputs(doc.get("inputs"), inputs)
		if err != nil {
			return nil, err
		}
		if err := doc.setRaw("inputs", merged); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc.encode(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// mergeInputs replaces the inputs of the same id in a JSON array, or
// appends them.
func mergeInputs(raw json.RawMessage, inputs []map[string]any) (json.RawMessage, error) {
	var list []json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("inputs is not an array: %w", err)
		}
	}
	for _, in := range inputs {
		value, err := marshalIndent(in)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(list, func(item json.RawMessage) bool {
			var probe struct {
				ID string `json:"id"`
			}
			return json.Unmarshal(item, &probe) == nil && probe.ID == in["id"]
		})
		if i < 0 {
			list = append(list, value)
		} else {
			list[i] = value
		}
	}
	return marshalIndent(list)
}

// jsonObject is a JSON object whose members keep their order and raw
// values, so a merge changes only what it sets.
type jsonObject []jsonMember

type jsonMember struct {
	key   string
	value json.RawMessage
}

// parseObject reads a JSON object; empty input is an empty object.
func parseObject(raw []byte, what string) (jsonObject, error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || string(trimmed) == "null" {
		return jsonObject{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%s is not a JSON object (comments are not supported: edit the file by hand with what engram setup prints)", what)
	}
	var obj jsonObject
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
		}
		obj = append(obj, jsonMember{tok.(string), value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s has more than one JSON value", what)
	}
	return obj, nil
}

func (o jsonObject) get(key string) json.RawMessage {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

func (o *jsonObject) set(key string, value any) error {
	raw, err := marshalIndent(value)
	if err != nil {
		return err
	}
	return o.setRaw(key, raw)
}

func (o *jsonObject) setRaw(key string, raw json.RawMessage) error {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = raw
			return nil
		}
	}
	*o = append(*o, jsonMember{key, raw})
	return nil
}

func (o jsonObject) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(m.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
