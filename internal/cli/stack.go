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
)

// localUserID owns every local stack: the event streams of a stack are
// those of the agent <stack> of this user (agent-local-<stack>), so a
// stack's log has the same shape as a cloud agent's.
const localUserID = "local"

// stack is one opened local stack: the embedded engine of `engram serve`
// (the same wiring, app) over ~/.engram/stacks/<name>, without the HTTP
// listener.
type localStack struct {
	name string
	dir  string
	app  *server
}

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
func (c *cli) openStack(ctx context.Context, create bool) (*localStack, error) {
	return c.openNamedStack(ctx, c.stackName(), create)
}

func (c *cli) openNamedStack(ctx context.Context, name string, create bool) (*localStack, error) {
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
	a, err := c.newStackApp(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open stack %s: %w", name, err)
	}
	if err := a.caughtUp.waitServing(ctx); err != nil {
		a.close(context.Background())
		return nil, fmt.Errorf("open stack %s: %w", name, err)
	}
	return &localStack{name: name, dir: dir, app: a}, nil
}

// newStackApp opens the stack's engine, waiting up to stackLockWait while
// another engram process holds the stack (an `engram mcp` call or another
// command, each holding it for one command's time).
func (c *cli) newStackApp(ctx context.Context, cfg serveConfig) (*server, error) {
	deadline := time.Now().Add(stackLockWait)
	for {
		a, err := newServer(ctx, cfg, c.stderrLogger())
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
func (s *localStack) close() error { return s.app.close(context.Background()) }

// meta is the metadata of a write made by the command line.
func (s *localStack) meta() domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorUser, ID: localUserID, UserID: localUserID}, RequestID: "cli"}
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
	cfg.fillFromStandardEnv()
	return cfg, nil
}
