package cli

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// These tests run the command line in-process (run, as main does, minus
// os.Exit): what they check is text and parsing, not the process, and a
// binary run costs a stack start each time. TestCommandLineExitCodes runs
// the binary for the exit codes.

// runIn runs `engram args…` in-process with stdin and returns stdout,
// stderr and the exit code main would give.
func runIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := runWithStdin(t, stdin, args, &stdout, &stderr)
	code := 0
	if err != nil {
		code = exitCode(err)
	}
	return stdout.String(), stderr.String(), code
}

// runWithStdin is run with os.Stdin replaced for the command line.
func runWithStdin(t *testing.T, stdin string, args []string, stdout, stderr *bytes.Buffer) error {
	t.Helper()
	if len(args) > 0 && !slices.Contains([]string{"serve", "projections", "models", "healthcheck", "help", "-h", "--help", "version", "--version"}, args[0]) {
		return runStackCommand(t.Context(), args, strings.NewReader(stdin), stdout, stderr)
	}
	return run(t.Context(), args, strings.NewReader(""), stdout, stderr)
}

// singleDashLongFlag finds a help line that shows a long flag with one dash
// ("  -statement"): help shows "--statement", and "-s, --stack" for the
// one-letter twins.
var singleDashLongFlag = regexp.MustCompile(`(?m)^\s+-[a-z][a-z-]+\b`)

func TestCLIHelpListsCommandsAndFlags(t *testing.T) {
	t.Setenv("ENGRAM_HOME", t.TempDir())
	top, _, code := runIn(t, "", "help")
	if code != 0 {
		t.Fatalf("engram help: exit %d", code)
	}
	for _, cmd := range []string{"episode", "belief", "note", "value", "goal", "playbook", "raw", "relationship", "drive", "show", "list", "forget", "edit", "stacks",
		"search", "config", "auth", "keys", "embed", "status", "import", "sync",
		"process", "suggestions", "anxiety", "audit", "stats", "settings", "processing", "provenance", "recover", "protect", "unprotect", "weaken", "verify", "dashboard", "completion"} {
		if !strings.Contains(top, "\n  "+cmd+" ") {
			t.Errorf("engram help does not list %s:\n%s", cmd, top)
		}
	}
	// Every command and subcommand answers --help and -h with its usage and
	// its flags in the --flag form.
	for _, cmd := range [][]string{
		{"episode"}, {"belief"}, {"note"}, {"value"}, {"goal"}, {"playbook"}, {"raw"}, {"raw", "list"}, {"relationship"}, {"drive"},
		{"show"}, {"list"}, {"forget"}, {"edit"}, {"search"}, {"embed"}, {"status"}, {"import"},
		{"stacks", "list"}, {"stacks", "delete"}, {"config", "get"}, {"config", "set"}, {"config", "unset"}, {"config", "list"},
		{"auth", "register"}, {"auth", "verify"}, {"auth", "login"}, {"auth", "status"}, {"auth", "logout"},
		{"keys", "list"}, {"keys", "create"}, {"keys", "revoke"}, {"keys", "cycle"},
		{"sync", "push"}, {"sync", "pull"}, {"sync", "status"}, {"sync", "run"},
		{"process"}, {"process", "exhaust"}, {"anxiety"}, {"audit"}, {"stats"}, {"provenance"}, {"recover"}, {"protect"}, {"unprotect"}, {"weaken"}, {"verify"},
		{"suggestions", "list"}, {"suggestions", "show"}, {"suggestions", "accept"}, {"suggestions", "reject"}, {"suggestions", "dismiss"},
		{"settings", "get"}, {"settings", "set"}, {"processing", "get"}, {"processing", "set"}, {"dashboard"},
		{"completion"},
	} {
		for _, help := range []string{"--help", "-h"} {
			out, stderr, code := runIn(t, "", append(cmd, help)...)
			if code != 0 || stderr != "" || !strings.HasPrefix(out, "Usage: engram") || !strings.Contains(out, "Flags:") ||
				!strings.Contains(out, "\n  --json\n") || !strings.Contains(out, "\n  -s, --stack string\n") {
				t.Errorf("engram %s %s: exit %d, stderr %q:\n%s", strings.Join(cmd, " "), help, code, stderr, out)
			}
			if bad := singleDashLongFlag.FindString(out); bad != "" {
				t.Errorf("engram %s %s shows %q: long flags take two dashes\n%s", strings.Join(cmd, " "), help, bad, out)
			}
		}
	}
	for _, group := range []string{"stacks", "config", "auth", "keys", "sync", "suggestions", "settings", "processing"} {
		if out, _, code := runIn(t, "", group, "--help"); code != 0 || !strings.HasPrefix(out, "Usage: engram") || strings.Contains(out, " -h'") {
			t.Errorf("engram %s --help: exit %d\n%s", group, code, out)
		}
	}
	// The server's commands list their flags the same way.
	for _, cmd := range [][]string{{"serve"}, {"projections", "rebuild"}, {"projections", "status"}, {"models", "import-glove"}, {"healthcheck"}} {
		out, _, code := runIn(t, "", append(cmd, "--help")...)
		if code != 0 || !strings.Contains(out, "\n  --") || singleDashLongFlag.MatchString(out) {
			t.Errorf("engram %s --help: exit %d\n%s", strings.Join(cmd, " "), code, out)
		}
	}
	episode, _, _ := runIn(t, "", "episode", "--help")
	for _, f := range []string{"--objective", "--outcome", "--outcome-type", "--lessons", "--emotional-valence", "--emotional-arousal", "--confidence", "--tag", "--derived-from", "--created-at", "--json", "--stack"} {
		if !regexp.MustCompile(`(?m)^  (-., )?` + f + `( |$)`).MatchString(episode) {
			t.Errorf("engram episode --help does not list %s:\n%s", f, episode)
		}
	}
	if !strings.HasPrefix(episode, "Usage: engram [-s STACK] episode OBJECTIVE --outcome … [flags]\n") || !strings.Contains(episode, "(required; or give it as the argument)") {
		t.Errorf("engram episode --help does not say the objective is the argument:\n%s", episode)
	}
}

// TestCompletionScripts: each shell's script names every command; the bash
// script parses, and completes commands, subcommands, flags and stacks.
func TestCompletionScripts(t *testing.T) {
	home := t.TempDir()
	t.Setenv("ENGRAM_HOME", home)
	var commands []string
	for _, line := range strings.Split(usage, "\n") {
		if name, ok := strings.CutPrefix(line, "  "); ok && name != "" && name[0] != ' ' {
			commands = append(commands, strings.Fields(name)[0])
		}
	}
	for _, c := range cliCommands() {
		commands = append(commands, c.name)
	}
	if len(commands) < 40 {
		t.Fatalf("found only %d commands: %v", len(commands), commands)
	}

	scripts := map[string]string{}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, stderr, code := runIn(t, "", "completion", shell)
		if code != 0 || stderr != "" || strings.TrimSpace(out) == "" {
			t.Fatalf("engram completion %s: exit %d, stderr %q, %d bytes", shell, code, stderr, len(out))
		}
		for _, cmd := range commands {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(cmd) + `\b`).MatchString(out) {
				t.Errorf("the %s script does not name the command %s", shell, cmd)
			}
		}
		scripts[shell] = out
	}
	if _, _, code := runIn(t, "", "completion", "powershell"); code != exitUsage {
		t.Errorf("engram completion powershell: exit %d, want %d", code, exitUsage)
	}

	script := filepath.Join(t.TempDir(), "engram.bash")
	if err := os.WriteFile(script, []byte(scripts["bash"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, stack := range []string{"work", "home"} {
		if err := os.MkdirAll(filepath.Join(home, "stacks", stack), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		line string // the command line up to the cursor
		want []string
	}{
		{"engram bel", []string{"belief"}},
		{"engram pro", []string{"process", "processing", "projections", "protect", "provenance"}},
		{"engram keys ", []string{"list", "create", "revoke", "cycle"}},
		{"engram -s work keys c", []string{"create", "cycle"}},
		{"engram belief --sta", []string{"--stack", "--statement"}},
		{"engram --json belief 'tea is good' --ta", []string{"--tag"}},
		{"engram keys revoke --y", []string{"--yes"}},
		{"engram serve --data-d", []string{"--data-dir"}},
		{"engram completion ", []string{"bash", "zsh", "fish"}},
		{"engram -s ", []string{"home", "work"}},
		{"engram --", []string{"--stack", "--json", "--quiet", "--help", "--version"}},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got := bashComplete(t, script, home, tc.line)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("completing %q: %v, want %v", tc.line, got, want)
			}
		})
	}
}

// bashComplete sources the script and asks it to complete line, as bash
// does when Tab is pressed at its end.
func bashComplete(t *testing.T, script, home, line string) []string {
	t.Helper()
	driver := `source "$1"; eval "COMP_WORDS=($2)"; [[ $2 == *' ' ]] && COMP_WORDS+=(''); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _engram; printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", "-c", driver, "bash", script, line)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ENGRAM_HOME=" + home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestHelpFlagsForm pins the line format of writeFlags.
func TestHelpFlagsForm(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("stack", "", "local stack")
	fs.String("s", "", "short for --stack")
	fs.Int("limit", 20, "most results")
	fs.Bool("yes", false, "do not ask")
	var b bytes.Buffer
	writeFlags(&b, fs)
	want := "  --limit int\n      most results (default 20)\n  -s, --stack string\n      local stack\n  --yes\n      do not ask\n"
	if b.String() != want {
		t.Fatalf("writeFlags:\n%s\nwant:\n%s", b.String(), want)
	}
}
