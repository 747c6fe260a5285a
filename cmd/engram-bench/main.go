// Command engram-bench measures Engram through its public HTTP API:
//
//	engram-bench quality  retrieval quality on a benchmark split (LoCoMo dev)
//	                      per search mode, scored by the split's score.py and
//	                      set against its BM25 baseline
//	engram-bench load     ingest rate and search latency/throughput under
//	                      concurrency, on one agent filled with synthetic notes
//	engram-bench replay   fill a data dir with synthetic notes, stop, and
//	                      rebuild every projection, then each alone (events/s)
//
// Each starts a fresh embedded server on a temporary data directory unless
// --server names a running one. Run `engram-bench <command> -h` for flags.
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

// Exit codes: targets failing is not the same as the harness failing.
const (
	exitOK            = 0
	exitError         = 1
	exitUsage         = 2
	exitTargetsFailed = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "quality":
		err = runQuality(ctx, args[1:], stdout, stderr)
	case "load":
		err = runLoad(ctx, args[1:], stdout, stderr)
	case "replay":
		err = runReplay(ctx, args[1:], stdout, stderr)
	case "restart":
		err = runRestart(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "engram-bench: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	var tf *targetsFailedError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &tf):
		fmt.Fprintln(stderr, "engram-bench:", err)
		return exitTargetsFailed
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "engram-bench:", err)
		return exitUsage
	}
	fmt.Fprintln(stderr, "engram-bench:", err)
	return exitError
}

// errUsage marks errors in the command line.
var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: engram-bench <command> [flags]

commands:
  quality   ingest a benchmark corpus, run its queries per search mode, score
            them with score.py and compare with the BM25 baseline
  load      fill one agent with N synthetic memories, then measure search
            latency (end to end and server side) and throughput per mode
  replay    fill a fresh data dir with N synthetic memories through the API,
            stop the server, rebuild all projections and each alone, and
            report events/s per projection
  restart   restart the server on a filled data dir after clean stops and
            after SIGKILLs: seconds to /readyz 200, RSS and anonymous memory

Run engram-bench <command> -h for the flags of a command.
`)
}
