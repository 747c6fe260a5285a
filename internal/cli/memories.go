package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// captureCommand returns the command that records one memory of type t.
// --json prints the object POST /memories returns.
func captureCommand(t captureType) func(ctx context.Context, c *cli, args []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags(t.command, t.args(), "Capture "+t.article+" "+string(t.typ)+" in the local stack (the first capture creates the stack).")
		fields := append(t.fields, metadataFields()...)
		ff := registerFields(fs, fields, t.textField().name)
		common := registerCommon(fs)
		pos, err := c.parse(fs, args, 0, 1)
		if err != nil {
			return err
		}
		content, err := ff.content(t.typ, fields)
		if err != nil {
			return err
		}
		if err := c.fillText(content, t, pos); err != nil {
			return err
		}
		if t.typ == memory.RawEntry {
			if _, ok := content["source"]; !ok {
				content["source"] = "cli"
			}
		}
		raw, err := contentJSON(content)
		if err != nil {
			return err
		}
		st, err := c.openStack(ctx, true, writeParts)
		if err != nil {
			return err
		}
		defer st.close()
		created, err := st.app.Memories.Create(ctx, st.meta(), st.name, commands.MemoryInput{
			Type: string(t.typ), Content: raw, Tags: common.tags, DerivedFrom: common.derivedFrom, CreatedAt: common.createdAt,
		})
		if err != nil {
			return err
		}
		out := client.CreatedMemory{Type: string(created.Type), ID: created.ID, CreatedAt: created.CreatedAt.UTC(),
			Embedding: client.EmbeddingState{Model: created.Embedding.Model, Dimensions: created.Embedding.Dimensions, Status: created.Embedding.Status}}
		if c.json {
			return c.printJSON(out)
		}
		fmt.Fprintf(c.stdout, "%s %s (%s)\n", out.Type, out.ID, out.Embedding.Status)
		return nil
	}
}

// fillText sets the main text field of t from the argument; with neither
// the argument nor its flag, a type that reads stdin takes it from there.
// The argument and the flag together are a usage error: which one was
// meant is not for the command line to guess.
func (c *cli) fillText(content map[string]any, t captureType, pos []string) error {
	field := t.textField()
	_, flagged := content[field.name]
	switch {
	case len(pos) == 1 && flagged:
		return usageErrorf("%s: give the %s either as the argument or with --%s, not both", t.command, strings.ReplaceAll(field.name, "_", " "), field.flagName())
	case len(pos) == 1:
		v, err := field.value(pos)
		if err != nil {
			return err
		}
		content[field.name] = v
	case !flagged && t.stdin:
		b, err := io.ReadAll(io.LimitReader(c.stdin, int64(memory.MaxTextChars)*4+1))
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		content[field.name] = strings.TrimRight(string(b), "\n")
	}
	return nil
}

func showCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("show", "ID", "Show one memory of the stack, forgotten or not (--json: the object GET /memories/{id} returns).")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	st, err := c.openStack(ctx, false, readParts)
	if err != nil {
		return err
	}
	defer st.close()
	v, err := st.app.Queries.Get(ctx, localUserID, pos[0])
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(v)
	}
	printMemory(c.stdout, v, time.Now())
	return nil
}

// printMemory shows every field of a memory for people.
func printMemory(w io.Writer, v memory.View, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", v.ID)
	fmt.Fprintf(tw, "type\t%s\n", v.Type)
	fmt.Fprintf(tw, "created\t%s (%s)\n", v.CreatedAt.UTC().Format(time.RFC3339), relativeTime(v.CreatedAt, now))
	if !v.UpdatedAt.IsZero() && !v.UpdatedAt.Equal(v.CreatedAt) {
		fmt.Fprintf(tw, "updated\t%s (%s)\n", v.UpdatedAt.UTC().Format(time.RFC3339), relativeTime(v.UpdatedAt, now))
	}
	if len(v.Tags) > 0 {
		fmt.Fprintf(tw, "tags\t%s\n", strings.Join(v.Tags, ", "))
	}
	if len(v.DerivedFrom) > 0 {
		fmt.Fprintf(tw, "derived from\t%s\n", strings.Join(v.DerivedFrom, ", "))
	}
	if v.Forgotten {
		fmt.Fprintf(tw, "forgotten\t%s\n", relativeTime(*v.ForgottenAt, now))
	}
	fmt.Fprintf(tw, "embedding\t%s (%s, %d dimensions)\n", v.Embedding.Status, v.Embedding.Model, v.Embedding.Dimensions)
	for _, kv := range contentFields(v.Content) {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

func listCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("list", "[--type T]… [--limit N] [--include-forgotten] [--cursor C]", "List the stack's memories, newest first (--json: the object GET /memories returns).")
	var types stringList
	fs.Var(&types, "type", "only this type, plural or singular name (repeat for more)")
	limit := fs.Int("limit", 20, fmt.Sprintf("at most this many (1-%d)", memory.MaxListLimit))
	includeForgotten := fs.Bool("include-forgotten", false, "include forgotten memories")
	cursor := fs.String("cursor", "", "next_cursor of the previous page")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	q := memory.ListQuery{UserID: localUserID, AgentID: c.stackName(), Limit: *limit, IncludeForgotten: *includeForgotten, Cursor: *cursor}
	var err error
	if q.Types, err = memory.ParseTypeFilter("type", splitCommas(types)); err != nil {
		return err
	}
	if q.Limit < 1 || q.Limit > memory.MaxListLimit {
		return domain.Invalid("limit", "--limit must be between 1 and %d, got %d", memory.MaxListLimit, q.Limit)
	}
	st, err := c.openStack(ctx, false, readParts)
	if err != nil {
		return err
	}
	defer st.close()
	page, err := st.app.Queries.List(ctx, q)
	if err != nil {
		return err
	}
	if page.Memories == nil {
		page.Memories = []memory.View{}
	}
	if c.json {
		var next *string
		if page.NextCursor != "" {
			next = &page.NextCursor
		}
		return c.printJSON(map[string]any{"memories": page.Memories, "next_cursor": next})
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tCREATED\tTEXT")
	for _, v := range page.Memories {
		text := summary(v.Type, v.Content)
		if v.Forgotten {
			text = "(forgotten) " + text
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.ID, v.Type, relativeTime(v.CreatedAt, now), text)
	}
	tw.Flush()
	if page.NextCursor != "" {
		c.notice("more: engram list --cursor %s", page.NextCursor)
	}
	return nil
}

func forgetCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("forget", "ID [--purge]", "Hide a memory from search; it stays in the log and in show/list --include-forgotten. --purge removes it from every projection instead (--json: the object DELETE /memories/{id} returns).")
	purge := fs.Bool("purge", false, "remove the memory from every projection (the log keeps the fact)")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	st, err := c.openStack(ctx, false, writeParts)
	if err != nil {
		return err
	}
	defer st.close()
	out := client.Forgotten{ID: pos[0]}
	if *purge {
		if err := st.app.Memories.Purge(ctx, st.meta(), pos[0], nil); err != nil {
			return err
		}
		out.Purged = true
	} else {
		v, err := st.app.Memories.Forget(ctx, st.meta(), pos[0], nil)
		if err != nil {
			return err
		}
		out.Forgotten, out.ForgottenAt = v.Forgotten, v.ForgottenAt
	}
	if c.json {
		return c.printJSON(out)
	}
	if out.Purged {
		fmt.Fprintf(c.stdout, "purged %s\n", out.ID)
	} else {
		fmt.Fprintf(c.stdout, "forgot %s\n", out.ID)
	}
	return nil
}

// allContentFields is every content flag of every type, for edit, which
// learns the memory's type only after parsing.
func allContentFields() []contentField {
	var out []contentField
	for _, t := range captureTypes() {
		out = append(out, t.fields...)
	}
	return append(out, metadataFields()...)
}

func editCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("edit", "ID [--FIELD VALUE]… [--tag T]… [--unset FIELD]…",
		"Change a memory: each content flag replaces that field (list flags replace the whole list), --tag replaces the tags, --unset restores a field's default. Changed text is embedded again (--json: the object PATCH /memories/{id} returns).")
	ff := registerFields(fs, allContentFields(), "")
	var tags, unset stringList
	fs.Var(&tags, "tag", "a tag; the given tags replace the memory's tags (repeat for more)")
	clearTags := fs.Bool("clear-tags", false, "remove every tag")
	fs.Var(&unset, "unset", "content field to restore to its default (repeat for more)")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	st, err := c.openStack(ctx, false, writeParts)
	if err != nil {
		return err
	}
	defer st.close()
	current, err := st.app.Queries.Get(ctx, localUserID, pos[0])
	if err != nil {
		return err
	}
	ct := captureTypeOf(current.Type)
	fields := append(ct.fields, metadataFields()...)
	content, err := ff.content(current.Type, fields)
	if err != nil {
		return err
	}
	for _, name := range unset {
		content[strings.ReplaceAll(name, "-", "_")] = nil
	}
	var patch commands.MemoryPatch
	if len(content) > 0 {
		if patch.Content, err = contentJSON(content); err != nil {
			return err
		}
	}
	switch {
	case *clearTags && len(tags) > 0:
		return usageErrorf("edit: --clear-tags and --tag exclude each other")
	case *clearTags:
		patch.Tags = &[]string{}
	case len(tags) > 0:
		t := []string(tags)
		patch.Tags = &t
	}
	v, err := st.app.Memories.Patch(ctx, st.meta(), pos[0], patch)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(v)
	}
	printMemory(c.stdout, v, time.Now())
	return nil
}

// splitCommas splits every value at commas, so --type a,b equals
// --type a --type b.
func splitCommas(values []string) []string {
	var out []string
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}
