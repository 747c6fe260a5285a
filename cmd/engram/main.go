// Command engram is the Engram server, its maintenance commands, the CLI and
// the local dashboard, in one binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		// Help, usage errors and errors the command line showed itself have
		// said what they had to say already.
		if !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errUsage) && !errors.Is(err, errReported) {
			fmt.Fprintln(os.Stderr, "engram:", err)
		}
		os.Exit(exitCode(err))
	}
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
  version                   print the version, commit and Go version (also --version)

Run 'engram <command> --help' for the flags of a command.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage+cliUsage())
		return nil
	case "version", "--version", "-version":
		fmt.Fprint(stdout, buildVersionText())
		return nil
	default:
		return runStackCommand(ctx, args, os.Stdin, stdout, stderr)
	}
}
