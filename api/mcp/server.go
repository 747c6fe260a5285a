package mcp

import (
	"context"
	"fmt"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a server.
type Options struct {
	// Agent, when set, binds the server to one agent: tools, resources and
	// the prompt refuse any other agent_id. Over HTTP a request's binding
	// (/mcp?agent_id=) comes with its caller instead (see HTTPHandler).
	Agent string
	// Version is Engram's version, announced as the server's.
	Version string
	Logger  *slog.Logger
	// Tools, when set, hears of every tool call (metrics).
	Tools ToolObserver
}

// ToolObserver hears of every tool call: the tool's name and whether it
// failed (an isError result).
type ToolObserver interface {
	ToolCalled(tool string, failed bool)
}

// Server is Engram's MCP server: the SDK's, which serves every transport,
// and its tool calls as HTTPHandler answers the stateless revision's
// calls directly (see directCalls).
type Server struct {
	*sdk.Server
	direct directCalls
}

// NewServer returns the MCP server of Engram's tools, resources and
// session_start prompt over backend. Over HTTP each request's caller (its
// credential's user and the connection's agent binding) reaches backend in
// the context (CallerFrom); over stdio there is none, and opts.Agent binds.
func NewServer(backend Backend, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	guide := instructions
	if opts.Agent != "" {
		guide += fmt.Sprintf(" This server serves agent %q only: pass it as agent_id.", opts.Agent)
	}
	impl := &sdk.Implementation{Name: "engram", Title: "Engram memory", Version: opts.Version}
	s := &Server{
		Server: sdk.NewServer(impl, &sdk.ServerOptions{Logger: opts.Logger, Instructions: guide}),
		direct: directCalls{tools: map[string]toolCall{}, impl: impl},
	}
	h := &handlers{
		logger: opts.Logger,
		calls:  opts.Tools,
		backend: func(ctx context.Context, extra *sdk.RequestExtra) (context.Context, Backend, string) {
			if c, ok := callerOf(extra); ok {
				return WithCaller(ctx, c), backend, c.Agent
			}
			return ctx, backend, opts.Agent
		},
	}
	h.tools(s)
	h.resources(s.Server)
	h.prompts(s.Server)
	return s
}

const instructions = `Engram is your long-term memory. At the start of a session call memory_status (or use the session_start prompt); search_memories before answering from memory; add_memory or capture to keep what you learn; get_memory before update_memory, whose version it needs.`
