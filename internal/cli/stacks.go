package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// stackJSON is one stack in `stacks list --json`.
type stackJSON struct {
	Stack          string    `json:"stack"`
	Path           string    `json:"path"`
	MemoryCount    int       `json:"memory_count"`
	EmbeddingModel string    `json:"embedding_model"`
	Dimensions     int       `json:"dimensions"`
	CreatedAt      time.Time `json:"created_at"`
}

func stacksCommand(ctx context.Context, c *cli, args []string) error {
	if c.isHelp(args, "Usage: engram stacks list [--json]\n       engram stacks delete NAME [--yes]\n\nStacks live in "+c.stacksDir()+"; a stack is one agent, named by its id.\n") {
		return nil
	}
	if len(args) == 0 {
		return usageErrorf("stacks: say list or delete NAME")
	}
	switch args[0] {
	case "list":
		return stacksList(ctx, c, args[1:])
	case "delete":
		return stacksDelete(ctx, c, args[1:])
	}
	return usageErrorf("stacks: unknown subcommand %q (list or delete)", args[0])
}

func stacksList(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("stacks list", "", "List the local stacks under $ENGRAM_HOME/stacks with their memory counts and models.")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	entries, err := os.ReadDir(c.stacksDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out := []stackJSON{}
	for _, e := range entries {
		if !e.IsDir() || memory.ValidateAgentID(e.Name()) != nil {
			continue
		}
		info, err := c.describeStack(ctx, e.Name())
		if err != nil {
			return err
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stack < out[j].Stack })
	if c.json {
		return c.printJSON(map[string]any{"stacks": out})
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STACK\tMEMORIES\tMODEL\tCREATED")
	now := time.Now()
	for _, s := range out {
		created := "-"
		if !s.CreatedAt.IsZero() {
			created = relativeTime(s.CreatedAt, now)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.Stack, s.MemoryCount, s.EmbeddingModel, created)
	}
	return tw.Flush()
}

// describeStack opens a stack to read its agent record.
func (c *cli) describeStack(ctx context.Context, name string) (stackJSON, error) {
	st, err := c.openNamedStack(ctx, name, false, readParts)
	if err != nil {
		return stackJSON{}, err
	}
	defer st.close()
	out := stackJSON{Stack: name, Path: st.dir}
	agent, found, err := st.app.Core.Memories.Agent(ctx, localUserID, name)
	if err != nil {
		return out, err
	}
	if found {
		out.MemoryCount, out.EmbeddingModel, out.Dimensions, out.CreatedAt = agent.MemoryCount, agent.EmbeddingModel, agent.Dimensions, agent.CreatedAt
	} else {
		model, err := c.defaultModel(st.dir)
		if err != nil {
			return out, err
		}
		out.EmbeddingModel, out.Dimensions = model.Name, model.Dimensions
	}
	return out, nil
}

func stacksDelete(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("stacks delete", "NAME [--yes]", "Delete a local stack and everything in it, on this machine only (the cloud agent is not touched).")
	yes := flags.Bool("yes", false, "do not ask for confirmation")
	pos, err := c.parse(flags, args, 1, 1)
	if err != nil {
		return err
	}
	name := pos[0]
	dir, err := c.stackDir(name)
	if err != nil {
		return err
	}
	info, err := c.describeStack(ctx, name)
	if err != nil {
		return err
	}
	if !*yes {
		if err := c.confirm(fmt.Sprintf("Delete stack %q with %d memories (%s)?", name, info.MemoryCount, dir)); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete stack %s: %w", name, err)
	}
	if c.json {
		return c.printJSON(map[string]any{"stack": name, "deleted": true})
	}
	fmt.Fprintf(c.stdout, "deleted stack %s\n", name)
	return nil
}

// errNotConfirmed is returned when the user did not answer yes.
var errNotConfirmed = domain.Errorf(domain.KindConflict, "not confirmed; nothing was changed (pass --yes to skip the question)").WithCode("not_confirmed")

// confirm asks a yes/no question on stderr and reads the answer from
// stdin; anything but y or yes (including no input) is a no.
func (c *cli) confirm(question string) error {
	fmt.Fprintf(c.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(c.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errNotConfirmed
}
