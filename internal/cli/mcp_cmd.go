package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	apimcp "github.com/engram-memory/engram/api/mcp"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/datadir"
	"github.com/engram-memory/engram/internal/app"
)

// mcpCommand serves one stack to an MCP client over stdio: the local stack
// (same engine, data dir and lock as every other command), or with --cloud
// — or when the cloud is configured and --local is not given, as search
// decides — the cloud agent of the same id through the API. stdout carries
// protocol messages only; logs go to stderr.
func mcpCommand(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("mcp", "[--local|--cloud]", "Serve the stack to an MCP client (Claude Code, Cursor, …) over stdio: the tools add_memory, capture, search_memories, get_memory, list_memories, update_memory, forget_memory, review_suggestions and memory_status act on the agent whose id is the stack's name. The local stack is opened for each call only, so other commands keep working beside it.")
	localOnly := flags.Bool("local", false, "serve the local stack even when the cloud is configured")
	cloudOnly := flags.Bool("cloud", false, "serve the cloud agent of the stack's id, with the CLI's credentials")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	if *localOnly && *cloudOnly {
		return usageErrorf("mcp: --local and --cloud exclude each other")
	}
	name := c.stackName()
	if _, err := c.stackDir(name); err != nil {
		return err
	}
	backend, err := c.mcpBackend(name, *localOnly, *cloudOnly)
	if err != nil {
		return err
	}
	server := apimcp.NewServer(backend, apimcp.Options{Agent: name, Version: serverVersion(), Logger: c.stderrLogger()})
	err = server.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(c.stdin), Writer: nopWriteCloser{c.stdout}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil // the client closed stdin, or a signal ended the server
	}
	return err
}

// mcpBackend chooses the side `engram mcp` serves.
func (c *cli) mcpBackend(name string, localOnly, cloudOnly bool) (apimcp.Backend, error) {
	if localOnly {
		return &stackBackend{c: c, name: name}, nil
	}
	cl, err := c.loadCloud()
	if err != nil {
		return nil, err
	}
	switch {
	case cl.configured():
		return c.cloudMCPBackend(cl)
	case cloudOnly:
		return nil, domain.Errorf(domain.KindUnauthorized, "--cloud: the cloud is not configured (set cloud.base_url and run engram auth login)")
	}
	return &stackBackend{c: c, name: name}, nil
}

// localCaller is who the local stack's MCP writes act for: the stack's
// user, like the command line's, with "mcp" where the CLI's say "cli".
func localCaller() apimcp.Caller {
	return apimcp.Caller{Actor: domain.Actor{Kind: domain.ActorUser, ID: localUserID, UserID: localUserID}, RequestID: "mcp"}
}

// stackBackend serves a local stack, opening it for each call and closing
// it after, so it holds the stack's one-writer lock only while a call runs:
// a command line capture beside it waits at most that long (see
// stackLockWait), and each call sees every capture made before it.
type stackBackend struct {
	c    *cli
	name string
}

// withStack runs f on the stack opened with the parts the call uses;
// create makes a missing stack (writes), otherwise a missing stack is
// not_found.
func withStack[T any](ctx context.Context, b *stackBackend, create bool, parts app.Parts, f func(apimcp.Backend) (T, error)) (T, error) {
	var zero T
	st, err := b.c.openNamedStack(ctx, b.name, create, parts)
	if err != nil {
		if domain.ErrorKind(err) == domain.KindNotFound {
			return zero, domain.NotFound("agent")
		}
		return zero, err
	}
	defer st.close()
	return f(apimcp.NewServiceBackend(st.app.MCP, localCaller()))
}

func (b *stackBackend) AddMemory(ctx context.Context, in apimcp.NewMemory) (apimcp.Created, error) {
	return withStack(ctx, b, true, writeParts, func(s apimcp.Backend) (apimcp.Created, error) { return s.AddMemory(ctx, in) })
}

func (b *stackBackend) Search(ctx context.Context, q apimcp.SearchQuery) (apimcp.SearchResults, error) {
	return withStack(ctx, b, false, searchParts, func(s apimcp.Backend) (apimcp.SearchResults, error) { return s.Search(ctx, q) })
}

func (b *stackBackend) GetMemory(ctx context.Context, id string) (apimcp.Memory, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) (apimcp.Memory, error) { return s.GetMemory(ctx, id) })
}

func (b *stackBackend) Provenance(ctx context.Context, id string) (apimcp.Provenance, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) (apimcp.Provenance, error) { return s.Provenance(ctx, id) })
}

func (b *stackBackend) ListMemories(ctx context.Context, q apimcp.ListQuery) (apimcp.MemoryPage, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) (apimcp.MemoryPage, error) { return s.ListMemories(ctx, q) })
}

func (b *stackBackend) UpdateMemory(ctx context.Context, id string, version int64, p apimcp.Patch) (apimcp.Memory, error) {
	return withStack(ctx, b, false, writeParts, func(s apimcp.Backend) (apimcp.Memory, error) { return s.UpdateMemory(ctx, id, version, p) })
}

func (b *stackBackend) ForgetMemory(ctx context.Context, id string, version int64) (apimcp.Memory, error) {
	return withStack(ctx, b, false, writeParts, func(s apimcp.Backend) (apimcp.Memory, error) { return s.ForgetMemory(ctx, id, version) })
}

func (b *stackBackend) PendingSuggestions(ctx context.Context, agentID string, limit int) ([]apimcp.Suggestion, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) ([]apimcp.Suggestion, error) { return s.PendingSuggestions(ctx, agentID, limit) })
}

func (b *stackBackend) Suggestion(ctx context.Context, id string) (apimcp.Suggestion, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) (apimcp.Suggestion, error) { return s.Suggestion(ctx, id) })
}

func (b *stackBackend) AcceptSuggestion(ctx context.Context, id string) (apimcp.Accepted, error) {
	return withStack(ctx, b, false, writeParts, func(s apimcp.Backend) (apimcp.Accepted, error) { return s.AcceptSuggestion(ctx, id) })
}

func (b *stackBackend) RejectSuggestion(ctx context.Context, id, reason string) (apimcp.Suggestion, error) {
	return withStack(ctx, b, false, writeParts, func(s apimcp.Backend) (apimcp.Suggestion, error) { return s.RejectSuggestion(ctx, id, reason) })
}

func (b *stackBackend) Stats(ctx context.Context, agentID string) (apimcp.Stats, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) (apimcp.Stats, error) { return s.Stats(ctx, agentID) })
}

func (b *stackBackend) Anxiety(ctx context.Context, agentID string) (apimcp.Anxiety, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) (apimcp.Anxiety, error) { return s.Anxiety(ctx, agentID) })
}

func (b *stackBackend) Settings(ctx context.Context, agentID string) (json.RawMessage, error) {
	return withStack(ctx, b, false, readParts, func(s apimcp.Backend) (json.RawMessage, error) { return s.Settings(ctx, agentID) })
}

// stackLockWait bounds how long a command waits for a stack another
// engram process is using (an `engram mcp` call, another command) before
// it reports the stack in use; stackLockRetry is how often it looks.
const (
	stackLockWait  = 10 * time.Second
	stackLockRetry = 10 * time.Millisecond
)

// isStackHeld reports whether err is the stack's lock held by another process.
func isStackHeld(err error) bool {
	var held *datadir.HeldError
	return errors.As(err, &held)
}

// mcpPublicURL is the base URL the MCP protected-resource metadata names:
// --public-url when given; else none, and each request's own host names it
// (the default public URL is the listen address, which a client of a
// wildcard address such as 0.0.0.0 never uses, and MCP clients check that
// the resource is the URL they connected to).
func mcpPublicURL(cfg serveConfig) string {
	if cfg.PublicURL == "http://"+cfg.Addr {
		return ""
	}
	return cfg.PublicURL
}

// serverVersion is the version `engram version` prints, which MCP clients
// are told.
func serverVersion() string {
	first, _, _ := strings.Cut(buildVersionText(), "\n")
	return strings.TrimPrefix(first, "engram ")
}

// stderrLogger logs warnings and errors on stderr, as every command does;
// ENGRAM_LOG_LEVEL (serve's --log-level) shows more, e.g. debug names
// what a local command opened (the application's components).
func (c *cli) stderrLogger() *slog.Logger {
	level := slog.LevelWarn
	if v, ok := os.LookupEnv(envName("log-level")); ok {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			level = slog.LevelWarn
		}
	}
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
