package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
)

// Cloud defaults of the command line.
const (
	defaultCloudTimeout = 3 * time.Second
	maxCloudTimeout     = 5 * time.Minute
)

// configKey is one setting of ~/.engram/config.json: its dotted name, what
// it means, and the check that turns a value into what is stored.
type configKey struct {
	name  string
	help  string
	parse func(string) (any, error)
}

// configKeys are the settings `engram config` accepts.
func configKeys() []configKey {
	return []configKey{
		{"embeddings.provider", "embedding provider of local stacks and of serve: local or openai", func(v string) (any, error) {
			if v != "local" && v != "openai" {
				return nil, fmt.Errorf("must be local or openai")
			}
			return v, nil
		}},
		{"embeddings.model", "embedding model, e.g. engram-hash-384 (local) or text-embedding-3-small (openai)", func(v string) (any, error) {
			if strings.TrimSpace(v) == "" || len(v) > 200 || strings.ContainsAny(v, " \t\n") {
				return nil, fmt.Errorf("must be a model name without spaces")
			}
			return v, nil
		}},
		{"cloud.base_url", "API base URL of the cloud, e.g. https://engram.example.com/v1 (http only to loopback)", func(v string) (any, error) {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("must be an http(s)://host[:port]/... URL")
			}
			if !client.SecureBaseURL(v) {
				return nil, fmt.Errorf("must use https unless the host is loopback (127.0.0.1, ::1 or localhost): credentials travel to it")
			}
			return strings.TrimRight(v, "/"), nil
		}},
		{"cloud.timeout", "how long a cloud search may take before the local stack answers, e.g. 3s", func(v string) (any, error) {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d > maxCloudTimeout {
				return nil, fmt.Errorf("must be a duration from 1ms to %s, such as 3s or 500ms", maxCloudTimeout)
			}
			return v, nil
		}},
		{"sync.raw", "push raw entries to the cloud too: true or false (default false)", func(v string) (any, error) {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("must be true or false")
			}
			return b, nil
		}},
	}
}

func lookupConfigKey(name string) (configKey, error) {
	var names []string
	for _, k := range configKeys() {
		if k.name == name {
			return k, nil
		}
		names = append(names, k.name)
	}
	return configKey{}, domain.Invalid("key", "unknown setting %q; the settings are %s", name, strings.Join(names, ", "))
}

// configPath is ~/.engram/config.json.
func (c *cli) configPath() string { return filepath.Join(c.home, "config.json") }

// readConfigFile reads config.json as nested objects; a missing file is
// empty.
func (c *cli) readConfigFile() (map[string]any, error) {
	raw, err := os.ReadFile(c.configPath())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", c.configPath(), err)
	}
	return out, nil
}

// configValue returns the value of a dotted key, if set.
func configValue(cfg map[string]any, key string) (string, bool) {
	section, name, _ := strings.Cut(key, ".")
	m, ok := cfg[section].(map[string]any)
	if !ok {
		return "", false
	}
	switch v := m[name].(type) {
	case string:
		return v, true
	case nil:
		return "", false
	default:
		b, _ := json.Marshal(v)
		return string(b), true
	}
}

// cliSettings are the cloud settings the commands use.
type cliSettings struct {
	baseURL string // cloud.base_url, or client.DefaultBaseURL
	timeout time.Duration
}

// settings reads config.json, checking each value as config set does.
func (c *cli) settings() (cliSettings, error) {
	s := cliSettings{baseURL: client.DefaultBaseURL, timeout: defaultCloudTimeout}
	cfg, err := c.readConfigFile()
	if err != nil {
		return s, err
	}
	for _, k := range []string{"cloud.base_url", "cloud.timeout"} {
		v, ok := configValue(cfg, k)
		if !ok {
			continue
		}
		key, _ := lookupConfigKey(k)
		parsed, err := key.parse(v)
		if err != nil {
			return s, fmt.Errorf("%s: %s %s", c.configPath(), k, err)
		}
		if k == "cloud.base_url" {
			s.baseURL = parsed.(string)
		} else {
			s.timeout, _ = time.ParseDuration(parsed.(string))
		}
	}
	return s, nil
}

// writeConfigFile replaces config.json atomically.
func (c *cli) writeConfigFile(cfg map[string]any) error {
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.configPath(), append(raw, '\n'), 0o644)
}

// writeFileAtomic writes data to a temporary file beside path with mode,
// then renames it over path, so a reader never sees half a file and the
// mode holds from the first byte.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func configCommand(_ context.Context, c *cli, args []string) error {
	var keysHelp strings.Builder
	for _, k := range configKeys() {
		fmt.Fprintf(&keysHelp, "\n  %-20s %s", k.name, k.help)
	}
	if c.isHelp(args, "Usage: engram config get KEY | set KEY VALUE | unset KEY | list\n\nSettings of "+c.configPath()+":"+keysHelp.String()+"\n") {
		return nil
	}
	if len(args) == 0 {
		return usageErrorf("config: say get, set, unset or list")
	}
	sub, rest := args[0], args[1:]
	type shape struct {
		args     string
		min, max int
	}
	shapes := map[string]shape{"get": {"KEY", 1, 1}, "set": {"KEY VALUE", 2, 2}, "unset": {"KEY", 1, 1}, "list": {"", 0, 0}}
	sh, ok := shapes[sub]
	if !ok {
		return usageErrorf("config: unknown subcommand %q (get, set, unset or list)", sub)
	}
	flags := c.flags("config "+sub, sh.args, "Read or change "+c.configPath()+". Settings:"+keysHelp.String())
	pos, err := c.parse(flags, rest, sh.min, sh.max)
	if err != nil {
		return err
	}
	cfg, err := c.readConfigFile()
	if err != nil {
		return err
	}
	if sub == "list" {
		return c.configList(cfg)
	}
	key, err := lookupConfigKey(pos[0])
	if err != nil {
		return err
	}
	section, name, _ := strings.Cut(key.name, ".")
	switch sub {
	case "get":
		v, ok := configValue(cfg, key.name)
		if !ok {
			return domain.Errorf(domain.KindNotFound, "%s is not set", key.name)
		}
		if c.json {
			return c.printJSON(map[string]any{"key": key.name, "value": v})
		}
		fmt.Fprintln(c.stdout, v)
		return nil
	case "set":
		v, err := key.parse(pos[1])
		if err != nil {
			return domain.Invalid("value", "%s %s (got %q)", key.name, err, pos[1])
		}
		m, _ := cfg[section].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m[name] = v
		cfg[section] = m
	case "unset":
		if m, ok := cfg[section].(map[string]any); ok {
			delete(m, name)
			if len(m) == 0 {
				delete(cfg, section)
			}
		}
	}
	if err := c.writeConfigFile(cfg); err != nil {
		return err
	}
	if c.json {
		v, ok := configValue(cfg, key.name)
		var value any
		if ok {
			value = v
		}
		return c.printJSON(map[string]any{"key": key.name, "value": value})
	}
	return nil
}

// configList prints every known setting and its value ("" when unset).
func (c *cli) configList(cfg map[string]any) error {
	values := map[string]any{}
	var names []string
	for _, k := range configKeys() {
		names = append(names, k.name)
		if v, ok := configValue(cfg, k.name); ok {
			values[k.name] = v
		} else {
			values[k.name] = nil
		}
	}
	if c.json {
		return c.printJSON(map[string]any{"settings": values})
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, n := range names {
		v := "(unset)"
		if s, ok := values[n].(string); ok {
			v = s
		}
		fmt.Fprintf(tw, "%s\t%s\n", n, v)
	}
	return tw.Flush()
}
