package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/app"
)

// localUserID owns every local stack: the event streams of a stack are
// those of the agent <stack> of this user (agent-local-<stack>), so a
// stack's log has the same shape as a cloud agent's.
const localUserID = "local"

// localStack is one opened local stack: the application of `engram serve`
// (the same composition root, internal/app) over ~/.engram/stacks/<name>,
// with only the parts the command uses and without the HTTP listener.
type localStack struct {
	name string
	dir  string
	app  *app.App
	// opened is how long the open took (search reports it as open_ms).
	opened time.Duration
}

// Parts of the application the local commands ask for: a read opens what
// it reads, a write adds the write side and the projection engine. No
// local command starts a background worker (embedding queue, job runner,
// scheduler, mailer): those belong to a server.
const (
	readParts    = app.Queries
	writeParts   = app.Queries | app.Writes
	keywordParts = app.KeywordSearch
	searchParts  = app.Search
)

// stackName is the stack the command works on.
func (c *cli) stackName() string {
	if c.stack == "" {
		return defaultStack
	}
	return c.stack
}

// stacksDir holds every local stack.
func (c *cli) stacksDir() string { return filepath.Join(c.home, "stacks") }

// stackDir is where a stack lives, after checking its name: a stack is an
// agent, so its name follows the agent id rules.
func (c *cli) stackDir(name string) (string, error) {
	if err := memory.ValidateAgentID(name); err != nil {
		return "", domain.Invalid("agent_id", "stack name %q must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-'", name)
	}
	return filepath.Join(c.stacksDir(), name), nil
}

// errNoStack is returned when a command that only reads finds no stack.
func errNoStack(name string) error {
	return domain.Errorf(domain.KindNotFound, "stack %q does not exist yet (capturing a memory creates it; 'engram stacks list' shows the stacks)", name)
}

// stackExists reports whether the named stack has been created.
func (c *cli) stackExists(name string) (bool, error) {
	dir, err := c.stackDir(name)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// openStack opens the command's stack. create makes a missing stack (the
// first capture); otherwise a missing stack is not_found and nothing is
// created on disk.
func (c *cli) openStack(ctx context.Context, create bool, parts app.Parts) (*localStack, error) {
	return c.openNamedStack(ctx, c.stackName(), create, parts)
}

func (c *cli) openNamedStack(ctx context.Context, name string, create bool, parts app.Parts) (*localStack, error) {
	start := time.Now()
	dir, err := c.stackDir(name)
	if err != nil {
		return nil, err
	}
	if !create {
		exists, err := c.stackExists(name)
		if err != nil {
			return nil, err
		}
		if !exists {
			return nil, errNoStack(name)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create stack %s: %w", name, err)
	}
	cfg, err := stackConfig(c.home, dir)
	if err != nil {
		return nil, err
	}
	a, err := c.newStackApp(ctx, cfg, parts)
	if err != nil {
		return nil, fmt.Errorf("open stack %s: %w", name, err)
	}
	if err := a.CaughtUp().WaitServing(ctx); err != nil {
		a.Close(context.Background())
		return nil, fmt.Errorf("open stack %s: %w", name, err)
	}
	return &localStack{name: name, dir: dir, app: a, opened: time.Since(start)}, nil
}

// newStackApp opens the stack's engine, waiting up to stackLockWait while
// another engram process holds the stack (an `engram mcp` call or another
// command, each holding it for one command's time).
func (c *cli) newStackApp(ctx context.Context, cfg serveConfig, parts app.Parts) (*app.App, error) {
	settings, err := cfg.settings(c.stderrLogger())
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(stackLockWait)
	for {
		a, err := app.New(ctx, settings, parts)
		if err == nil || !isStackHeld(err) || time.Now().After(deadline) {
			return a, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(stackLockRetry):
		}
	}
}

// close stops the engine and releases the stack.
func (s *localStack) close() error { return s.app.Close(context.Background()) }

// meta is the metadata of a write made by the command line.
func (s *localStack) meta() domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorUser, ID: localUserID, UserID: localUserID}, RequestID: "cli", Source: domain.SourceCLI}
}

// stackConfig is the configuration `engram serve` would run with (its
// flags' environment twins, config.json, OpenAI's variables), pointed at a
// stack directory: a stack embeds exactly like the server.
func stackConfig(home, dir string) (serveConfig, error) {
	var cfg serveConfig
	flags := serveFlags(&cfg)
	if err := parseFlags(flags, nil); err != nil {
		return cfg, err
	}
	if err := applyLocalConfig(flags, filepath.Join(home, "config.json")); err != nil {
		return cfg, err
	}
	cfg.DataDir, cfg.MailOutbox = dir, filepath.Join(dir, "outbox")
	cfg.MetricsAddr = "" // a local stack is no server: nothing scrapes it
	cfg.fillFromStandardEnv()
	return cfg, nil
}
