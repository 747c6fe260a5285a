package cli

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// Codex keeps its MCP servers in config.toml as [mcp_servers.NAME] tables.
// A TOML library would rewrite the whole file and drop its comments, so the
// merge replaces the text of that one table and leaves every other line as
// it was; the library then parses the result, which must hold exactly the
// table written, before anything is saved.

// codexServerTable is the server's [mcp_servers.NAME] table: command, args
// and env for stdio; url and bearer_token_env_var (the key hidden) or an
// Authorization header (--show-key) for streamable HTTP.
func codexServerTable(s mcpServerSpec) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", tomlKey(s.name))
	if s.http() {
		fmt.Fprintf(&b, "url = %s\n", tomlString(s.url))
		if s.key != "" {
			fmt.Fprintf(&b, "http_headers = { Authorization = %s }\n", tomlString(s.authorization("")))
		} else {
			fmt.Fprintf(&b, "bearer_token_env_var = %s\n", tomlString(mcpKeyEnv))
		}
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "command = %s\n", tomlString(s.command))
	args := make([]string, len(s.args))
	for i, a := range s.args {
		args[i] = tomlString(a)
	}
	fmt.Fprintf(&b, "args = [%s]\n", strings.Join(args, ", "))
	if len(s.env) > 0 {
		names := make([]string, 0, len(s.env))
		for name := range s.env {
			names = append(names, name)
		}
		slices.Sort(names)
		pairs := make([]string, len(names))
		for i, name := range names {
			pairs[i] = tomlKey(name) + " = " + tomlString(s.env[name])
		}
		fmt.Fprintf(&b, "env = { %s }\n", strings.Join(pairs, ", "))
	}
	return []byte(b.String())
}

// tomlBareKey is compiled at first use, not at every process start (every command of the command line is one).
var tomlBareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// tomlKey is a bare key when TOML allows one, else a quoted one.
func tomlKey(k string) string {
	if tomlBareKey().MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString is s as a TOML basic string: quotes, backslashes and control
// characters escaped, everything else (UTF-8 included) as is.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// mergeCodexServer returns config.toml with the server's table (and its
// sub-tables) replaced where it was, or appended.
func mergeCodexServer(old []byte, s mcpServerSpec) ([]byte, error) {
	if _, err := parseTOML(old); err != nil {
		return nil, fmt.Errorf("not valid TOML (%w); fix it, or add what engram setup codex prints by hand", err)
	}
	table := codexServerTable(s)
	lines := strings.SplitAfter(string(old), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out strings.Builder
	written, inServer := false, false
	var skipped []string // the lines of the server's old table
	for _, line := range lines {
		if path, ok := tomlTableHeader(line); ok {
			ours := len(path) >= 2 && path[0] == "mcp_servers" && path[1] == s.name
			if inServer && !ours {
				// The comments above the next table introduce it: they stay.
				keep := trailingComments(skipped)
				if len(keep) == 0 || strings.TrimSpace(keep[0]) != "" {
					out.WriteByte('\n')
				}
				out.WriteString(strings.Join(keep, ""))
			}
			skipped, inServer = nil, ours
			if ours && !written {
				out.Write(table)
				written = true
			}
		}
		if inServer {
			skipped = append(skipped, line)
			continue
		}
		out.WriteString(line)
	}
	if !written {
		text := out.String()
		if text != "" && !strings.HasSuffix(text, "\n") {
			out.WriteByte('\n')
		}
		if strings.TrimSpace(text) != "" {
			out.WriteByte('\n')
		}
		out.Write(table)
	}
	merged := []byte(out.String())
	if err := checkCodexServer(merged, table, s.name); err != nil {
		return nil, err
	}
	return merged, nil
}

// trailingComments is the run of blank and comment lines that ends lines.
func trailingComments(lines []string) []string {
	i := len(lines)
	for i > 0 {
		t := strings.TrimSpace(lines[i-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		i--
	}
	return lines[i:]
}

// checkCodexServer verifies that merged parses and holds exactly table as
// mcp_servers.NAME: a server defined in a form the merge does not replace
// (an inline table, dotted keys under [mcp_servers]) fails here rather than
// being saved twice.
func checkCodexServer(merged, table []byte, name string) error {
	doc, err := parseTOML(merged)
	if err != nil {
		return fmt.Errorf("mcp_servers.%s is defined in a form engram setup cannot replace (%w); remove it and run setup again", name, err)
	}
	want, err := parseTOML(table)
	if err != nil {
		return fmt.Errorf("the generated table does not parse: %w", err)
	}
	if !reflect.DeepEqual(serverOf(doc, name), serverOf(want, name)) {
		return fmt.Errorf("mcp_servers.%s is defined in a form engram setup cannot replace; remove it and run setup again", name)
	}
	return nil
}

func parseTOML(raw []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(raw, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("line %d column %d: %s", row, col, de.Error())
		}
		return nil, err
	}
	return doc, nil
}

func serverOf(doc map[string]any, name string) any {
	servers, _ := doc["mcp_servers"].(map[string]any)
	return servers[name]
}

// tomlTableHeader reads a [table] or [[array.of.tables]] header line into
// its key path. A line inside a multi-line string that looks like a header
// would be taken for one; checkCodexServer catches what that breaks.
func tomlTableHeader(line string) ([]string, bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "["), "[")
	var path []string
	for {
		s = strings.TrimLeft(s, " \t")
		var part string
		switch {
		case strings.HasPrefix(s, `"`):
			end := closingQuote(s)
			if end < 0 {
				return nil, false
			}
			unquoted, err := strconv.Unquote(s[:end+1])
			if err != nil {
				return nil, false
			}
			part, s = unquoted, s[end+1:]
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, false
			}
			part, s = s[1:end+1], s[end+2:]
		default:
			n := 0
			for n < len(s) && (s[n] == '_' || s[n] == '-' || s[n] >= '0' && s[n] <= '9' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= 'a' && s[n] <= 'z') {
				n++
			}
			if n == 0 {
				return nil, false
			}
			part, s = s[:n], s[n:]
		}
		path = append(path, part)
		s = strings.TrimLeft(s, " \t")
		switch {
		case strings.HasPrefix(s, "."):
			s = s[1:]
		case strings.HasPrefix(s, "]"):
			return path, true
		default:
			return nil, false
		}
	}
}

// closingQuote is the index of the quote that ends the basic string s
// starts with, or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}
