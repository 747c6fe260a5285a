package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/engram-memory/engram/infra/datadir"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/projections"
)

func projectionsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "rebuild" && args[0] != "status") {
		fmt.Fprint(stderr, "Usage: engram projections rebuild [NAME] [--data-dir DIR] [index flags as for serve]\n       (beside a live server on DIR: the server rebuilds NAME while it serves)\n       engram projections status [--data-dir DIR] [index flags as for serve]\n")
		return errUsage
	}
	sub := args[0]
	fs := flag.NewFlagSet("projections "+sub, flag.ContinueOnError)
	synopsis := "engram projections status [flags]"
	if sub == "rebuild" {
		synopsis = "engram projections rebuild [NAME...] [flags]"
	}
	dataDir := fs.String("data-dir", filepath.Join(engramHome(), "server"), "data directory (rebuild: of a stopped server, or NAME by the server live on it)")
	var indexes app.Indexes
	indexFlags(fs, &indexes)
	var eventStore app.EventStore
	eventStoreFlags(fs, &eventStore)
	var readModels app.ReadModels
	readModelFlags(fs, &readModels)
	// Flags may come before or after the projection name.
	var names []string
	rest := args[1:]
	for {
		if err := parseCommandFlags(fs, rest, synopsis, stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	readIndexKeys(&indexes)
	readEventStoreCredentials(&eventStore)
	if err := checkEventStoreSecret(args, eventStore); err != nil {
		return err
	}
	if err := checkReadModelsSecret(args, readModels); err != nil {
		return err
	}
	if sub == "rebuild" && liveServerOn(*dataDir) {
		return rebuildOnLiveServer(ctx, *dataDir, names, stdout)
	}
	// Offline, nothing else wants the spare core: the vector graphs build
	// while the log replays instead of waiting for the writes to pause.
	indexes.VectorOptions.BuildWhileWriting = true
	logger, err := newLogger(stderr, "warn", "text")
	if err != nil {
		return err
	}
	// status only reads, so it works beside a live server; rebuild writes
	// every projection and needs the data dir to itself.
	// The core alone: no part of the application is asked for, and this
	// command drives the engine itself.
	a, err := app.New(ctx, app.Settings{Config: app.Config{
		DataDir: *dataDir, SQLite: sqlite.Options{ReadOnly: sub == "status"}, EventStore: eventStore, ReadModels: readModels, Indexes: indexes, Logger: logger,
	}}, 0)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	st := a.Core
	engine := st.Engine
	if sub == "status" {
		positions := map[string]uint64{}
		for _, p := range st.Projections() {
			pos, err := p.Position(ctx)
			if err != nil {
				return err
			}
			positions[p.Name()] = pos
		}
		head, err := st.Store.Head(ctx)
		if err != nil {
			return err
		}
		status := map[string]any{"head": head, "projections": positions}
		// With stores the nodes share, who applies them: the lease holders.
		holders, err := st.LeaseHolders(ctx)
		if err != nil {
			return err
		}
		if len(holders) > 0 {
			status["leases"] = holders
		}
		// And the live rebuilds under way on them.
		open, err := st.OpenRebuilds(ctx)
		if err != nil {
			return err
		}
		rebuilding := map[string]map[string]string{}
		for name, r := range open {
			rebuilding[name] = map[string]string{"state": string(r.State), "node": r.Node, "requested_by": r.RequestedBy}
		}
		if len(rebuilding) > 0 {
			status["rebuilding"] = rebuilding
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(status)
	}
	// A projection whose store the nodes share is rebuilt under its
	// lease, and only when no serving node holds it.
	release, err := st.HoldLeases(ctx, 5*time.Second, names...)
	if err != nil {
		return err
	}
	defer release()
	start := time.Now()
	head, err := st.Store.Head(ctx)
	if err != nil {
		return err
	}
	rebuilt := names
	if len(rebuilt) == 0 {
		rebuilt = engine.Names()
	}
	stopBar := rebuildProgress(newProgress(stderr, false, "rebuilt", int(head)).withUnit("events"), engine, rebuilt)
	err = st.RebuildOffline(ctx, names...)
	stopBar(err == nil)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(stdout, "rebuilt %v from %d events in %s (%.0f events/s)\n", rebuilt, head, elapsed.Round(time.Millisecond), float64(head)/elapsed.Seconds())
	return nil
}

// rebuildOnLiveServer has the server live on dataDir rebuild each named
// projection in turn while it serves the others.
func rebuildOnLiveServer(ctx context.Context, dataDir string, names []string, stdout io.Writer) error {
	if len(names) == 0 {
		server := "a server"
		if pid := datadir.RecordedPID(dataDir); pid > 0 {
			server = fmt.Sprintf("a server (pid %d)", pid)
		}
		return fmt.Errorf("%s is live on %s: it rebuilds one named projection at a time while serving (engram projections rebuild NAME); to rebuild all, stop it first", server, dataDir)
	}
	for _, name := range names {
		res, err := rebuildLive(ctx, dataDir, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rebuilt %s on the live server from %d events in %.3fs (%.0f events/s)\n", res.Projection, res.Events, res.Seconds, float64(res.Events)/res.Seconds)
	}
	return nil
}

// rebuildProgress draws the rebuild's progress, the position the slowest
// of the rebuilt projections has reached in the log, five times a second
// until stop is called (complete: the rebuild reached the head).
func rebuildProgress(bar *progress, engine *projections.Engine, names []string) (stop func(complete bool)) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				status := engine.Status()
				slowest := uint64(0)
				for i, name := range names {
					if pos := status[name].Position; i == 0 || pos < slowest {
						slowest = pos
					}
				}
				bar.update(int(slowest))
			}
		}
	}()
	return func(complete bool) {
		close(quit)
		<-done
		if complete {
			bar.update(bar.total)
		}
		bar.finish()
	}
}
