package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeHelpListsEveryFlag: the help is generated from the flag
// definitions, so every flag, its default and its ENGRAM_* twin are there.
func TestServeHelpListsEveryFlag(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "-help"} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), []string{"serve", arg}, strings.NewReader(""), &stdout, &stderr)
		if !errors.Is(err, flag.ErrHelp) || exitCode(err) != 0 || stderr.Len() != 0 {
			t.Fatalf("serve %s: err %v, exit %d, stderr %q", arg, err, exitCode(err), stderr.String())
		}
		var cfg serveConfig
		serveFlags(&cfg).VisitAll(func(f *flag.Flag) {
			// A flag's line: "  --name VALUE" or, for a boolean, "  --name".
			if !regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(f.Name) + `( |$)`).MatchString(stdout.String()) {
				t.Errorf("serve %s: no line for --%s in the help", arg, f.Name)
			}
			want := []string{envName(f.Name)}
			if f.DefValue != "" {
				want = append(want, "default "+f.DefValue)
			}
			for _, w := range want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("serve %s: no %q in the help", arg, w)
				}
			}
		})
	}
}

// TestCommandLineExitCodes runs the binary: help asked for exits 0, a
// malformed command line 2, each with one clear message and no stray
// "engram: usage" line.
func TestCommandLineExitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		args     []string
		exit     int
		want     string
		wantNone string
	}{
		{"no command", nil, 2, "Usage: engram <command>", "engram: usage"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`, "engram: usage"},
		{"serve --help", []string{"serve", "--help"}, 0, "ENGRAM_DATA_DIR", "engram: usage"},
		{"unknown flag", []string{"serve", "--no-such-flag"}, 2, "Run 'engram serve --help'", "engram: usage"},
		{"projections rebuild --help", []string{"projections", "rebuild", "--help"}, 0, "--data-dir", "engram: usage"},
		{"version", []string{"version"}, 0, "engram ", "engram: "},
		{"--version", []string{"--version"}, 0, "go1.", "engram: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := runCLI(t, ctx, c.args...)
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.exit || !strings.Contains(out, c.want) || strings.Contains(out, c.wantNone) {
				t.Fatalf("engram %s: exit %d (want %d), output:\n%s", strings.Join(c.args, " "), code, c.exit, out)
			}
		})
	}
}
