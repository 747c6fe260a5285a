package app_test

import (
	"context"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/internal/testlog"
)

// TestStartLogTimesEachPart: a start from images says at debug level how
// long each part took, in wall and in CPU time, so a slow restart can be
// split into its parts (docs/benchmarks.md#restart): the database's open,
// each image's open (mapping and checksum) and read, the embedding
// models' load and the projections' catch-up. The keyword image's read,
// the vector image's read and the database's open run at once (on two
// cores a start takes about the longest one's wall time, not the sum;
// docs/snapshots.md): each of their log lines waits here until the other
// two have logged theirs, which in turn the first would wait for in vain.
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
	steps := newStepBarrier(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}),
		`index snapshot read index=keyword`, `index snapshot read index=vectors`, `database opened`)
	a, err := app.New(ctx, app.Settings{Config: app.Config{DataDir: dir, Logger: slog.New(steps)}, MailOutbox: t.TempDir()}, app.Server)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if waited := steps.waitedInVain(); len(waited) > 0 {
		t.Errorf("these steps ended before the others had started (they ran in turn): %v", waited)
	}
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

// stepBarrier is a log handler that writes to next, and then holds each
// of its steps' log lines (the message, and the index attribute when
// there is one) until every step has logged, or barrierWait has passed.
type stepBarrier struct {
	next    slog.Handler
	mu      sync.Mutex
	arrived map[string]bool
	all     chan struct{}
	inVain  []string
}

const barrierWait = 5 * time.Second

func newStepBarrier(next slog.Handler, steps ...string) *stepBarrier {
	b := &stepBarrier{next: next, arrived: map[string]bool{}, all: make(chan struct{})}
	for _, s := range steps {
		b.arrived[s] = false
	}
	return b
}

func (b *stepBarrier) Enabled(ctx context.Context, l slog.Level) bool { return b.next.Enabled(ctx, l) }

// WithAttrs and WithGroup leave the barrier: the steps log through the
// start's logger itself.
func (b *stepBarrier) WithAttrs(attrs []slog.Attr) slog.Handler { return b.next.WithAttrs(attrs) }
func (b *stepBarrier) WithGroup(name string) slog.Handler       { return b.next.WithGroup(name) }

func (b *stepBarrier) Handle(ctx context.Context, r slog.Record) error {
	if err := b.next.Handle(ctx, r); err != nil {
		return err
	}
	step := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "index" {
			step += " index=" + a.Value.String()
		}
		return true
	})
	b.mu.Lock()
	seen, ok := b.arrived[step]
	if !ok || seen {
		b.mu.Unlock()
		return nil
	}
	b.arrived[step] = true
	if !slices.Contains(slices.Collect(maps.Values(b.arrived)), false) {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(barrierWait):
		b.mu.Lock()
		b.inVain = append(b.inVain, step)
		b.mu.Unlock()
	}
	return nil
}

// waitedInVain names the steps that gave up waiting for the others.
func (b *stepBarrier) waitedInVain() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.inVain)
}
