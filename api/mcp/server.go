package mcp

import (
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a server.
type Options struct {
	// Agent, when set, binds the server to one agent: tools, resources and
	// the prompt refuse any other agent_id. Over HTTP a request's binding
	// (/mcp?agent_id=) comes with its caller instead (see WithCaller).
	Agent string
	// Version is Engram's version, announced as the server's.
	Version string
	Logger  *slog.Logger
}

// NewServer returns the MCP server of Engram's tools, resources and
// session_start prompt over backend.
func NewServer(backend Backend, opts Options) *sdk.Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "engram", Title: "Engram memory", Version: opts.Version}, &sdk.ServerOptions{
		Logger:       opts.Logger,
		Instructions: instructions,
	})
	return s
}

const instructions = `Engram is your long-term memory. Call memory_status (or the session_start prompt) at the start of a session, search_memories before answering from memory, and add_memory or capture to keep what you learn.`
