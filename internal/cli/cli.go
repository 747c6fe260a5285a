package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Exit codes of the command line (docs/cli.md#exit-codes).
const (
	exitError            = 1
	exitUsage            = 2
	exitCloudUnreachable = 3
)

// errCloudUnreachable marks a failure to reach the cloud when --cloud
// forced it (exit code 3).
var errCloudUnreachable = errors.New("cloud unreachable")

// errReported marks an error the command line has already shown, so main
// only turns it into an exit code.
var errReported = errors.New("already reported")

// errHelpShown ends a command whose help was asked for and printed.
var errHelpShown = errors.New("help shown")

// reportedError carries the original error (for its exit code) after it
// was printed.
type reportedError struct{ err error }

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() []error {
	return []error{e.err, errReported}
}

// usageError is a wrong invocation (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// cli is one invocation of a command-line command: where it reads and
// writes, and the options every command shares.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	home           string // ENGRAM_HOME or ~/.engram
	stack          string // -s/--stack, ENGRAM_STACK, or "default"
	json           bool   // --json: machine-readable output
	quiet          bool   // --quiet: no progress or notices on stderr
	// help prints the help of the command being parsed, and flagSet holds
	// its flags (both set by flags).
	help    func()
	flagSet *flag.FlagSet
}

// defaultStack is the stack used when neither -s nor ENGRAM_STACK names one.
const defaultStack = "default"

// cliCommand is one top-level command of the command line.
type cliCommand struct {
	name    string
	args    string // what follows the name in the usage line
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
	// subcommands are the words the command takes first (stacks list,
	// keys create, …), for the shell completions.
	subcommands []string
}

// cliCommands is the command table; main's dispatch hands every name it
// does not know to runStackCommand, which looks it up here.
func cliCommands() []cliCommand {
	cmds := []cliCommand{
		{"stacks", "list | delete NAME [--yes]", "list or delete local stacks", stacksCommand, []string{"list", "delete"}},
		{"dashboard", "--stack STACK [--port N] [--no-open] [--verbose]", "serve a stack's read-only dashboard on 127.0.0.1", dashboardCommand, nil},
		{"show", "ID", "show one memory", showCommand, nil},
		{"mcp", "[--local|--cloud]", "serve the stack to an MCP client (Claude Code, Cursor, …) over stdio", mcpCommand, nil},
		{"list", "[--type T]… [--limit N] [--include-forgotten]", "list memories, newest first", listCommand, nil},
		{"forget", "ID", "hide a memory from search (it stays in the log)", forgetCommand, nil},
		{"search", "QUERY… [flags]", "search the stack (the cloud when configured, else local)", searchCommand, nil},
		{"config", "get|set|unset KEY [VALUE] | list", "read or change ~/.engram/config.json", configCommand, []string{"get", "set", "unset", "list"}},
		{"auth", "register|verify|login|status|logout", "account and login in the cloud", authCommand, []string{"register", "verify", "login", "status", "logout"}},
		{"keys", "list | create NAME | revoke ID | cycle ID", "the account's API keys in the cloud", keysCommand, []string{"list", "create", "revoke", "cycle"}},
		{"embed", "TEXT… [--model M]", "print the embedding of a text with the configured provider", embedCommand, nil},
		{"status", "", "summarise the stack and the cloud", statusCommand, nil},
		{"import", "FILE|- [--local|--cloud]", "import an export (lossless) or memory items from a JSON Lines file", importCommand, nil},
		{"export", "[--format events|memories] [--output FILE] [--local|--cloud]", "export the stack as JSON Lines (lossless by default)", exportCommand, nil},
		{"reembed", "[--model M] [--type T]… [--wait] [--local|--cloud]", "re-embed the stack's memories with a model (a job; --wait follows it)", reembedCommand, nil},
		{"sync", "push|pull|status|run", "replicate the stack with the cloud agent of the same id", syncCommand, []string{"push", "pull", "status", "run"}},
		{"edit", "ID --FIELD VALUE… [--tag T]… [--unset FIELD]…", "change a memory's content or tags", editCommand, nil},
		{"process", "[--force] [--transition T] | exhaust [--max-cycles N] [--no-auto-promote]", "run a processing pass (exhaust: until nothing more comes of it)", processCommand, []string{"exhaust"}},
		{"suggestions", "list | show|accept|reject|dismiss ID", "what processing proposed; accept makes it a memory", suggestionsCommand, []string{"list", "show", "accept", "reject", "dismiss"}},
		{"anxiety", "", "how much the stack needs attention, with recommendations", anxietyCommand, nil},
		{"audit", "[--account] [--limit N] [--before C]", "the stack's (or, --account, the owner's) audit trail, newest first", auditCommand, nil},
		{"stats", "", "counts by type, strength tier and protection", statsCommand, nil},
		{"settings", "[get] | set KEY VALUE…", "the stack's settings (state, provenance, decay, lint, gates)", settingsCommand, []string{"get", "set"}},
		{"processing", "[get] | set KEY VALUE…", "the processing pipeline's configuration", processingCommand, []string{"get", "set"}},
		{"provenance", "ID [--direction up|down|both] [--depth N]", "a memory's sources and what was derived from it", provenanceCommand, nil},
		{"recover", "ID", "bring a forgotten memory back (weak)", strengthCommand("recover", "Bring a forgotten memory back at strength 0.25, searchable again", func(st *localStack) strengthAction { return st.app.Memories.Recover }), nil},
		{"protect", "ID", "freeze a memory's strength (no decay, no forget)", strengthCommand("protect", "Protect a memory: its strength stops decaying and it cannot be forgotten", func(st *localStack) strengthAction { return st.app.Memories.Protect }), nil},
		{"unprotect", "ID", "let a protected memory decay again", strengthCommand("unprotect", "Unprotect a memory: it decays again from its current strength", func(st *localStack) strengthAction { return st.app.Memories.Unprotect }), nil},
		{"weaken", "ID [--by X] [--reason R]", "lower a memory's strength", weakenCommand, nil},
		{"completion", "bash|zsh|fish", "print a shell completion script (source <(engram completion bash))", completionCommand, []string{"bash", "zsh", "fish"}},
		{"verify", "ID [--reason R]", "record that a memory still holds (strength up)", verifyCommand, nil},
		{"setup", "claude-code|claude-desktop|cursor|vscode|codex [--http] [--write]", "add Engram as an MCP server to an AI client's configuration", setupCommand, []string{"claude-code", "claude-desktop", "cursor", "vscode", "codex"}},
	}
	for _, t := range captureTypes() {
		c := cliCommand{t.command, t.args(), "capture " + t.article + " " + string(t.typ), captureCommand(t), nil}
		if t.typ == memory.RawEntry {
			c.subcommands = []string{"list"}
			c.args += " | list [--processed true|false] [--limit N]"
			c.summary += "; list: raw entries with their processing state"
			c.run = rawCommand(c.run)
		}
		cmds = append(cmds, c)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	return cmds
}

// cliUsage lists the command-line commands, for `engram help`.
func cliUsage() string {
	var b strings.Builder
	b.WriteString("\nLocal stacks and the cloud (engram [-s STACK] <command> [--json] [--quiet]):\n")
	for _, c := range cliCommands() {
		fmt.Fprintf(&b, "  %-13s %s\n", c.name, c.summary)
	}
	return b.String()
}

// runStackCommand runs a command-line command. args may start with the global
// options -s/--stack STACK, --json and --quiet; the command's own flags may
// repeat them. Every error is printed here (as JSON with --json) and
// returned wrapped in reportedError for its exit code.
func runStackCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, home: engramHome(), stack: os.Getenv("ENGRAM_STACK")}
	rest, err := c.parseGlobal(args)
	if err == nil && len(rest) == 0 {
		err = usageErrorf("no command given")
	}
	if err == nil {
		err = c.dispatch(ctx, rest)
	}
	switch {
	case err == nil || errors.Is(err, errHelpShown):
		return nil
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "engram: %v\nRun 'engram help' for the commands, 'engram <command> --help' for a command's flags.\n", err)
		return reportedError{err}
	}
	c.printError(err)
	return reportedError{err}
}

func (c *cli) dispatch(ctx context.Context, args []string) error {
	for _, cmd := range cliCommands() {
		if cmd.name == args[0] {
			return cmd.run(ctx, c, args[1:])
		}
	}
	return usageErrorf("unknown command %q", args[0])
}

// parseGlobal reads the options before the command name.
func (c *cli) parseGlobal(args []string) ([]string, error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		switch name {
		case "s", "stack":
			if !hasValue {
				if len(args) < 2 {
					return nil, usageErrorf("%s needs a stack name", args[0])
				}
				value, args = args[1], args[1:]
			}
			c.stack = value
		case "json":
			c.json = true
		case "quiet", "q":
			c.quiet = true
		default:
			return nil, usageErrorf("unknown option %s before the command", args[0])
		}
		args = args[1:]
	}
	return args, nil
}

// flags returns a flag set for one command with the shared options.
func (c *cli) flags(name, args, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.stack, "stack", c.stack, "local stack (agent id); env ENGRAM_STACK; default \"default\"")
	fs.StringVar(&c.stack, "s", c.stack, "short for --stack")
	fs.BoolVar(&c.json, "json", c.json, "print JSON (the API's objects) instead of text")
	fs.BoolVar(&c.quiet, "quiet", c.quiet, "no progress or notices on stderr")
	fs.Usage = func() {} // a parse error is reported once, by runStackCommand
	c.flagSet = fs
	c.help = func() {
		fmt.Fprintf(c.stdout, "Usage: engram [-s STACK] %s %s\n\n%s\n\nFlags:\n", name, args, summary)
		writeFlags(c.stdout, fs)
	}
	return fs
}

// parse parses flags and positional arguments in any order and checks the
// number of positional arguments (max -1: any).
func (c *cli) parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.help()
				return nil, errHelpShown
			}
			return nil, usageErrorf("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) < minArgs || (maxArgs >= 0 && len(positional) > maxArgs) {
		return nil, usageErrorf("%s: wrong number of arguments (%d); run 'engram %s --help'", fs.Name(), len(positional), fs.Name())
	}
	return positional, nil
}

// isHelp reports whether args ask a command group (stacks, config, auth,
// keys) for its help, and prints usage if so.
func (c *cli) isHelp(args []string, usage string) bool {
	if len(args) == 0 || (args[0] != "-h" && args[0] != "--help" && args[0] != "help") {
		return false
	}
	fmt.Fprint(c.stdout, usage)
	return true
}

// printJSON writes v as indented JSON on stdout.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// notice writes a line for people on stderr unless --quiet.
func (c *cli) notice(format string, args ...any) {
	if !c.quiet {
		fmt.Fprintf(c.stderr, format+"\n", args...)
	}
}

// cliErrorJSON is what --json prints on stderr for a failure: the error
// object of the API's failure envelope.
type cliErrorJSON struct {
	Success bool        `json:"success"`
	Error   errorObject `json:"error"`
}

// errorObject is an error as the API's failure envelope shows it: its
// code, message and details (a local stack has no request id).
type errorObject struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// errorObjectOf is err as --json shows it, on stderr for a failed command
// and inside a result that reports a failure of its own (an exhaust run's
// failed cycle). A field error names the flag that sets it.
func errorObjectOf(err error) errorObject {
	var de *domain.Error
	var ce *client.Error
	switch {
	case errors.As(err, &de):
		message := de.Message
		if f, ok := de.Details["field"].(string); ok {
			if flagName := fieldFlag(f); flagName != "" && !strings.Contains(message, flagName) {
				message += " (" + flagName + ")"
			}
		}
		return errorObject{Code: de.PublicCode(), Message: message, Details: de.Details}
	case errors.As(err, &ce):
		code := ce.Code
		if code == "" {
			code = "cloud_error"
		}
		return errorObject{Code: code, Message: fmt.Sprintf("cloud: %s (HTTP %d)", ce.Message, ce.Status), Details: ce.Details}
	case errors.Is(err, errCloudUnreachable):
		return errorObject{Code: "cloud_unreachable", Message: err.Error()}
	}
	return errorObject{Code: "error", Message: err.Error()}
}

// printError shows err on stderr: the API's error object with --json, a
// line for people otherwise.
func (c *cli) printError(err error) {
	out := cliErrorJSON{Error: errorObjectOf(err)}
	if c.json {
		enc := json.NewEncoder(c.stderr)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(out)
		return
	}
	fmt.Fprintf(c.stderr, "engram: %s\n", out.Error.Message)
}

// fieldFlag names the flag behind an API field name: content.objective is
// --objective, tags is --tag.
func fieldFlag(field string) string {
	switch {
	case strings.HasPrefix(field, "content."):
		name, _, _ := strings.Cut(strings.TrimPrefix(field, "content."), "[")
		return "--" + strings.ReplaceAll(name, "_", "-")
	case strings.HasPrefix(field, "tags"):
		return "--tag"
	case strings.HasPrefix(field, "derived_from"):
		return "--derived-from"
	case field == "created_at":
		return "--created-at"
	case field == "types":
		return "--type"
	case field == "agent_id":
		return "-s/--stack"
	}
	return ""
}
