package app_test

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testlog"
)

// TestStartLogTimesEachPart: a start from images says at debug level how
// long each part took, in wall and in CPU time, so a slow restart can be
// split into its parts (docs/benchmarks.md#restart): the database's open,
// each image's open (mapping and checksum) and read, the embedding
// models' load and the projections' catch-up.
func TestStartLogTimesEachPart(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	seed(t, dir, "the heron nests by the quarry")
	first, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir}}, app.Search)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil { // saves both images
		t.Fatal(err)
	}
	var log testlog.Buffer // the engine and the workers log from their own goroutines
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir, Logger: logger}, MailOutbox: t.TempDir()}, app.Server)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if err := a.CaughtUp().WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	const d = `[0-9.]+(ns|µs|ms|s)`
	for _, want := range []string{
		`msg="database opened" took=` + d + ` cpu=` + d,
		`msg="index snapshot read" index=keyword bytes=[0-9]+ took=` + d + ` cpu=` + d + ` open_took=` + d + ` open_cpu=` + d,
		`msg="index snapshot read" index=vectors bytes=[0-9]+ took=` + d + ` cpu=` + d + ` open_took=` + d + ` open_cpu=` + d,
		`msg="embedding models loaded" took=` + d + ` cpu=` + d,
		`msg="projections caught up" position=[0-9]+ took=` + d + ` cpu=` + d,
	} {
		if !regexp.MustCompile(want).MatchString(log.String()) {
			t.Errorf("no start log line matches %s in:\n%s", want, strings.TrimSpace(log.String()))
		}
	}
}
