package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

func embedCommand(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("embed", "TEXT… [--model M]", "Print the embedding of TEXT with the configured provider (embeddings.provider/model in config.json, as serve and the stacks use). --json prints the object POST /embeddings/generate returns.")
	model := flags.String("model", "default", "model to use (default: the configured one)")
	pos, err := c.parse(flags, args, 1, -1)
	if err != nil {
		return err
	}
	cfg, err := stackConfig(c.home, "")
	if err != nil {
		return err
	}
	catalog, err := newEmbedCatalog(cfg)
	if err != nil {
		return err
	}
	res, err := commands.NewEmbeddings(commands.EmbeddingsDeps{Catalog: catalog}).Generate(ctx, commands.GenerateRequest{
		Texts: []string{strings.Join(pos, " ")}, Model: *model, Field: "text", Single: true,
	})
	if err != nil {
		return err
	}
	out := client.Embedding{Embedding: res.Vectors[0], Dimensions: res.Dimensions, Model: res.Model, TokensUsed: res.TokensUsed}
	if c.json {
		return c.printJSON(out)
	}
	vec, err := json.Marshal(out.Embedding)
	if err != nil {
		return err
	}
	c.notice("%s, %d dimensions", out.Model, out.Dimensions)
	fmt.Fprintln(c.stdout, string(vec))
	return nil
}

// statusJSON is `engram status --json`.
type statusJSON struct {
	Stack     string         `json:"stack"`
	Path      string         `json:"path"`
	Exists    bool           `json:"exists"`
	Counts    map[string]int `json:"counts"` // per singular type; forgotten memories are left out
	Total     int            `json:"total"`
	Forgotten int            `json:"forgotten"`
	Events    uint64         `json:"events"`          // events in the stack's log
	Unpushed  uint64         `json:"unpushed_events"` // of those, not pushed to the cloud yet
	Embedding struct {
		Provider   string `json:"provider"`
		Model      string `json:"model"`
		Dimensions int    `json:"dimensions"`
	} `json:"embedding"`
	Cloud struct {
		BaseURL    string `json:"base_url"`
		Configured bool   `json:"configured"`
		Reachable  *bool  `json:"reachable"` // null when not configured
		Error      string `json:"error,omitempty"`
	} `json:"cloud"`
}

func statusCommand(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("status", "", "Summarise the stack: memories per type, embedding model, events in its log, and whether the cloud is configured and reachable.")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	var out statusJSON
	out.Stack, out.Counts = c.stackName(), map[string]int{}
	dir, err := c.stackDir(out.Stack)
	if err != nil {
		return err
	}
	out.Path = dir
	if out.Exists, err = c.stackExists(out.Stack); err != nil {
		return err
	}
	cfg, err := stackConfig(c.home, dir)
	if err != nil {
		return err
	}
	out.Embedding.Provider = cfg.EmbedProvider
	if out.Exists {
		if err := c.stackCounts(ctx, &out); err != nil {
			return err
		}
	} else {
		model, err := c.defaultModel(dir)
		if err != nil {
			return err
		}
		out.Embedding.Model, out.Embedding.Dimensions = model.Name, model.Dimensions
	}
	cl, err := c.loadCloud()
	if err != nil {
		return err
	}
	out.Cloud.BaseURL, out.Cloud.Configured = cl.settings.baseURL, cl.configured()
	if cl.configured() {
		ctx, cancel := context.WithTimeout(ctx, cl.settings.timeout)
		defer cancel()
		_, err := cl.client(cl.settings.timeout).Status(ctx)
		reachable := err == nil
		if reason, fallback := cloudFailure(err, cl.settings.timeout); err != nil && fallback {
			out.Cloud.Error = reason
			reachable = false
		} else if err != nil {
			out.Cloud.Error = err.Error()
		}
		out.Cloud.Reachable = &reachable
	}
	if c.json {
		return c.printJSON(out)
	}
	printStatus(c, out)
	return nil
}

// defaultModel is the embedding model a new stack in dir would be bound
// to; it loads the embedding models, which a stack that has an agent
// record does not need (the record names its model).
func (c *cli) defaultModel(dir string) (domain.EmbeddingModel, error) {
	cfg, err := stackConfig(c.home, dir)
	if err != nil {
		return domain.EmbeddingModel{}, err
	}
	catalog, err := newEmbedCatalog(cfg)
	if err != nil {
		return domain.EmbeddingModel{}, err
	}
	return catalog.DefaultModel(), nil
}

// stackCounts fills the per-type counts, the model and the log size.
func (c *cli) stackCounts(ctx context.Context, out *statusJSON) error {
	st, err := c.openStack(ctx, false, readParts)
	if err != nil {
		return err
	}
	defer st.close()
	version, err := st.app.Core.Memories.StreamVersion(ctx, memory.AgentStream(localUserID, st.name))
	if err != nil {
		return err
	}
	out.Events = uint64(version + 1)
	out.Unpushed = out.Events - min(out.Events, st.pushedEvents())
	agent, found, err := st.app.Core.Memories.Agent(ctx, localUserID, st.name)
	if err != nil {
		return err
	}
	if !found {
		model, err := c.defaultModel(st.dir)
		out.Embedding.Model, out.Embedding.Dimensions = model.Name, model.Dimensions
		return err
	}
	out.Embedding.Model, out.Embedding.Dimensions = agent.EmbeddingModel, agent.Dimensions
	for _, t := range memory.Types() {
		n, err := countMemories(ctx, st, []memory.Type{t}, false)
		if err != nil {
			return err
		}
		out.Counts[string(t)] = n
		out.Total += n
	}
	all, err := countMemories(ctx, st, nil, true)
	out.Forgotten = all - out.Total
	return err
}

// countMemories counts the stack's memories of the types (nil: all).
// Searchable types are counted by the read model; drives and forgotten
// memories, which it does not count, are paged through.
func countMemories(ctx context.Context, st *localStack, types []memory.Type, includeForgotten bool) (int, error) {
	if len(types) == 1 && types[0].Searchable() && !includeForgotten {
		return st.app.Core.Memories.CountMemories(ctx, localUserID, st.name, types)
	}
	n, cursor := 0, ""
	for {
		page, err := st.app.Queries.List(ctx, memory.ListQuery{UserID: localUserID, AgentID: st.name, Types: types, IncludeForgotten: includeForgotten, Limit: memory.MaxListLimit, Cursor: cursor})
		if err != nil {
			return 0, err
		}
		n += len(page.Memories)
		if cursor = page.NextCursor; cursor == "" {
			return n, nil
		}
	}
}

func printStatus(c *cli, out statusJSON) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "stack\t%s (%s)\n", out.Stack, out.Path)
	if !out.Exists {
		fmt.Fprintf(tw, "memories\tnone yet (the first capture creates the stack)\n")
	} else {
		fmt.Fprintf(tw, "memories\t%d (%d forgotten), %d events in the log, %d not pushed\n", out.Total, out.Forgotten, out.Events, out.Unpushed)
		for _, t := range memory.Types() {
			if n := out.Counts[string(t)]; n > 0 {
				fmt.Fprintf(tw, "  %s\t%d\n", t, n)
			}
		}
	}
	fmt.Fprintf(tw, "embedding\t%s, %s (%d dimensions)\n", out.Embedding.Provider, out.Embedding.Model, out.Embedding.Dimensions)
	cloud := "not configured (engram config set cloud.base_url URL; engram auth login)"
	if out.Cloud.Configured {
		cloud = "reachable"
		if !*out.Cloud.Reachable {
			cloud = "unreachable: " + out.Cloud.Error
		} else if out.Cloud.Error != "" {
			cloud = "error: " + out.Cloud.Error
		}
	}
	fmt.Fprintf(tw, "cloud\t%s — %s\n", out.Cloud.BaseURL, cloud)
	tw.Flush()
}
