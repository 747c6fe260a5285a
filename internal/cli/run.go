// Package cli is the engram command line: the server (serve), its
// maintenance commands (projections, models), the personal commands that
// work on local stacks or the cloud, the MCP server over stdio and the
// local dashboard. cmd/engram is a few lines that call Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Main runs the engram command line on args (without the program name)
// and returns the process's exit code. It prints what went wrong to
// stderr, except where the command line has said it already.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := run(ctx, args, stdin, stdout, stderr)
	if err == nil {
		return 0
	}
	// Help, usage errors and errors the command line showed itself have
	// said what they had to say already.
	if !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errUsage) && !errors.Is(err, errReported) {
		fmt.Fprintln(stderr, "engram:", err)
	}
	return exitCode(err)
}

// exitCode is 0 after help that was asked for, 2 for a malformed command
// line, 3 when a forced cloud could not be reached, 1 for any other failure.
func exitCode(err error) int {
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errCloudUnreachable):
		return exitCloudUnreachable
	}
	return exitError
}

// errUsage marks a malformed command line whose message has been printed.
var errUsage = errors.New("usage")

const usage = `Usage: engram <command> [flags]

Commands:
  serve                     run the HTTP API (embedded SQLite storage by default)
  projections rebuild [NAME] drop and rebuild read models and indexes from the event log
  projections status        show each projection's checkpoint
  models import-glove       convert GloVe word vectors into a local SIF model
  healthcheck               exit 0 when a server's /healthz answers 200 (the container's HEALTHCHECK)
  version                   print the version, commit and Go version (also --version)

Run 'engram <command> --help' for the flags of a command.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage+cliUsage())
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serveCommand(ctx, args[1:], stdout, stderr)
	case "projections":
		return projectionsCommand(ctx, args[1:], stdout, stderr)
	case "models":
		return modelsCommand(ctx, args[1:], stdout, stderr)
	case "healthcheck":
		return healthcheckCommand(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage+cliUsage())
		return nil
	case "version", "--version", "-version":
		fmt.Fprint(stdout, buildVersionText())
		return nil
	default:
		return runStackCommand(ctx, args, stdin, stdout, stderr)
	}
}
