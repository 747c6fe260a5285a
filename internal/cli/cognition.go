package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/internal/app"
	"github.com/engram-memory/engram/projections/query"
)

// The stack-cognition commands run on a local stack through the command
// handlers and queries the API calls (commands.Pipeline, commands.Memories,
// query.Service); --json prints the data object of the matching route.

// withStack opens the command's existing stack, runs fn and closes it.
// parts are the parts of the application fn uses.
func (c *cli) withStack(ctx context.Context, parts app.Parts, fn func(st *localStack) error) error {
	st, err := c.openStack(ctx, false, parts)
	if err != nil {
		return err
	}
	defer st.close()
	return fn(st)
}

func processCommand(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 && args[0] == "exhaust" {
		return processExhaust(ctx, c, args[1:])
	}
	fs := c.flags("process", "[--force] [--transition T] | exhaust [--max-cycles N] [--no-auto-promote]",
		"Run a processing pass over the stack: each due transition proposes suggestions (the rule-based processor when no chat model is configured) (--json: the object POST /agents/{id}/process returns).")
	force := fs.Bool("force", false, "run every enabled transition now, due or not")
	transition := fs.String("transition", "", "run only this transition (raw_to_episode, raw_to_note, episode_to_belief, …)")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		passes, err := st.app.Pipeline.Process(ctx, st.meta(), st.name, commands.ProcessRequest{Force: *force, Transition: *transition})
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"passes": passes})
		}
		if len(passes) == 0 {
			fmt.Fprintln(c.stdout, "no transition ran")
			return nil
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TRANSITION\tSOURCES\tSUGGESTIONS\tNOTE")
		for _, p := range passes {
			note := ""
			if p.Skipped {
				note = "skipped: " + p.SkipReason
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", p.Transition, p.SourceCount, len(p.Suggestions), note)
		}
		return tw.Flush()
	})
}

func processExhaust(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("process exhaust", "[--max-cycles N] [--no-auto-promote]",
		"Process the stack until nothing more comes of it: forced cycles at intensity light (raw transitions), then medium (+ episode transitions), then heavy (+ belief_to_value), each until two cycles in a row produce nothing (--json: the object POST /agents/{id}/process/exhaust returns).")
	maxCycles := fs.Int("max-cycles", processing.DefaultExhaustCycles, fmt.Sprintf("at most this many cycles (1-%d)", processing.MaxExhaustCycles))
	noAutoPromote := fs.Bool("no-auto-promote", false, "leave what processing proposes as pending suggestions instead of writing memories")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *maxCycles < 1 {
		return domain.Invalid("max_cycles", "--max-cycles must be between 1 and %d, got %d", processing.MaxExhaustCycles, *maxCycles)
	}
	autoPromote := !*noAutoPromote
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		r, err := st.app.Pipeline.Exhaust(ctx, st.meta(), st.name, commands.ExhaustRequest{MaxCycles: *maxCycles, AutoPromote: &autoPromote})
		if err != nil {
			return err
		}
		if err := printExhaust(c, r); err != nil {
			return err
		}
		if r.Failure != nil {
			// What the cycles before stored is printed; the exit status
			// and the message say the run failed.
			return fmt.Errorf("cycle %d failed; the %d cycles before it are stored: %w", r.CyclesCompleted+1, r.CyclesCompleted, r.Failure)
		}
		return nil
	})
}

// printExhaust prints an exhaust run's result: the object the API answers
// with --json (with, after a failed cycle, its error object, as the API
// shows it), else a table of its cycles and a summary line.
func printExhaust(c *cli, r commands.ExhaustResult) error {
	if c.json {
		out := struct {
			commands.ExhaustResult
			Error *errorObject `json:"error,omitempty"`
		}{ExhaustResult: r}
		if r.Failure != nil {
			failure := errorObjectOf(r.Failure)
			out.Error = &failure
		}
		return c.printJSON(out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CYCLE\tINTENSITY\tSOURCES\tPROMOTIONS\tSUGGESTIONS\tERRORS")
	for _, cy := range r.Cycles {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\n", cy.Cycle, cy.Intensity, cy.Sources, cy.Promotions, cy.Suggestions, cy.Errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	state := "not converged"
	if r.Converged {
		state = "converged"
	}
	fmt.Fprintf(c.stdout, "%d cycles, %d promotions, %d suggestions: %s (%s)\n", r.CyclesCompleted, r.TotalPromotions, r.TotalSuggestions, state, r.ConvergenceReason)
	return nil
}

// rawCommand is `engram raw`: a capture, or with "list" the raw entries
// and their processing state.
func rawCommand(capture func(context.Context, *cli, []string) error) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 && args[0] == "list" {
			return rawList(ctx, c, args[1:])
		}
		return capture(ctx, c, args)
	}
}

func rawList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("raw list", "[--processed true|false] [--limit N]",
		"List the stack's raw entries, newest first, with whether processing consumed them and what they became (--json: the object GET /agents/{id}/raw returns).")
	processed := fs.String("processed", "", "only the processed (true) or unprocessed (false) entries; default all")
	limit := fs.Int("limit", query.DefaultRawLimit, fmt.Sprintf("at most this many (1-%d)", query.MaxRawLimit))
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	// Weak raw entries are listed too, as GET /v1/agents/{id}/raw does.
	q := query.RawQuery{Limit: *limit, IncludeWeak: true}
	if *processed != "" {
		b, err := strconv.ParseBool(*processed)
		if err != nil {
			return domain.Invalid("processed", "--processed must be true or false, got %q", *processed)
		}
		q.Processed = &b
	}
	if *limit < 1 || *limit > query.MaxRawLimit {
		return domain.Invalid("limit", "--limit must be between 1 and %d, got %d", query.MaxRawLimit, *limit)
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		page, err := st.app.Queries.RawEntries(ctx, localUserID, st.name, q)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"raw_entries": page.Entries})
		}
		now := time.Now()
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCREATED\tPROCESSED\tINTO\tTEXT")
		for _, r := range page.Entries {
			fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", r.ID, relativeTime(r.CreatedAt, now), r.Processed, strings.Join(r.ProcessedInto, ","), summary(r.Type, r.Content))
		}
		return tw.Flush()
	})
}

const suggestionsUsage = `Usage: engram [-s STACK] suggestions list [--status S] [--limit N]
       engram [-s STACK] suggestions show|accept|reject|dismiss ID

What the processing pipeline proposed: list them, show one, accept one
(it becomes a memory derived from its sources), reject or dismiss one.
Run 'engram suggestions <subcommand> --help' for the flags.
`

func suggestionsCommand(ctx context.Context, c *cli, args []string) error {
	if c.isHelp(args, suggestionsUsage) {
		return errHelpShown
	}
	if len(args) == 0 {
		return usageErrorf("suggestions: give a subcommand: list, show, accept, reject or dismiss")
	}
	switch args[0] {
	case "list":
		return suggestionsList(ctx, c, args[1:])
	case "show":
		return suggestionShow(ctx, c, args[1:])
	case "accept":
		return suggestionAccept(ctx, c, args[1:])
	case "reject":
		return suggestionResolve(ctx, c, args[1:], processing.Rejected)
	case "dismiss":
		return suggestionResolve(ctx, c, args[1:], processing.Dismissed)
	}
	return usageErrorf("suggestions: unknown subcommand %q (list, show, accept, reject, dismiss)", args[0])
}

func suggestionsList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("suggestions list", "[--status S] [--limit N]", "List the stack's suggestions, newest first (--json: the object GET /agents/{id}/suggestions returns).")
	statusFlag := fs.String("status", "", "only this status: pending, promoted, modified, rejected, dismissed or expired")
	limit := fs.Int("limit", processing.DefaultSuggestionLimit, fmt.Sprintf("at most this many (1-%d)", processing.MaxSuggestionLimit))
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	var status processing.Status
	if *statusFlag != "" {
		st, err := processing.ParseStatus("status", *statusFlag)
		if err != nil {
			return err
		}
		status = st
	}
	if *limit < 1 || *limit > processing.MaxSuggestionLimit {
		return domain.Invalid("limit", "--limit must be between 1 and %d, got %d", processing.MaxSuggestionLimit, *limit)
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		list, err := st.app.Queries.Suggestions(ctx, localUserID, st.name, status, *limit)
		if err != nil {
			return err
		}
		if list == nil {
			list = []processing.Suggestion{}
		}
		if c.json {
			return c.printJSON(map[string]any{"suggestions": list})
		}
		now := time.Now()
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tCONFIDENCE\tCREATED\tTEXT")
		for _, sg := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\n", sg.ID, sg.MemoryType, sg.Status, sg.Confidence, relativeTime(sg.CreatedAt, now), summary(memory.Type(sg.MemoryType), sg.Content))
		}
		return tw.Flush()
	})
}

func suggestionShow(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("suggestions show", "ID", "Show one suggestion (--json: the object GET /suggestions/{id} returns).")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		sg, err := st.app.Queries.Suggestion(ctx, localUserID, pos[0])
		if err != nil {
			return err
		}
		return c.printSuggestion(sg)
	})
}

func (c *cli) printSuggestion(sg processing.Suggestion) error {
	if c.json {
		return c.printJSON(sg)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", sg.ID)
	fmt.Fprintf(tw, "type\t%s\n", sg.MemoryType)
	fmt.Fprintf(tw, "transition\t%s\n", sg.Transition)
	fmt.Fprintf(tw, "status\t%s\n", sg.Status)
	fmt.Fprintf(tw, "confidence\t%.2f\n", sg.Confidence)
	fmt.Fprintf(tw, "sources\t%s\n", strings.Join(sg.Sources, ", "))
	fmt.Fprintf(tw, "created\t%s (%s)\n", sg.CreatedAt.UTC().Format(time.RFC3339), relativeTime(sg.CreatedAt, now))
	fmt.Fprintf(tw, "expires\t%s\n", sg.ExpiresAt.UTC().Format(time.RFC3339))
	if sg.PromotedTo != "" {
		fmt.Fprintf(tw, "promoted to\t%s\n", sg.PromotedTo)
	}
	if sg.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", sg.Reason)
	}
	for _, kv := range contentFields(sg.Content) {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	return tw.Flush()
}

func suggestionAccept(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("suggestions accept", "ID [--content JSON] [--tag T]…",
		"Accept a pending suggestion: the memory is created (derived from the suggestion's sources) through the same checks as a capture (--json: the object POST /suggestions/{id}/accept returns).")
	content := fs.String("content", "", "a JSON object of content fields that replace the suggested ones")
	var tags stringList
	fs.Var(&tags, "tag", "a tag of the new memory (repeat for more)")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var o commands.AcceptOverrides
	if *content != "" {
		if !json.Valid([]byte(*content)) {
			return domain.Invalid("content", "--content must be a JSON object, got %q", *content)
		}
		o.Content = json.RawMessage(*content)
	}
	o.Tags = tags
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		out, err := st.app.Pipeline.Accept(ctx, st.meta(), pos[0], o)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{
				"suggestion": out.Suggestion,
				"memory":     map[string]any{"type": out.Memory.Type, "id": out.Memory.ID, "created_at": out.Memory.CreatedAt, "embedding": out.Memory.Embedding},
			})
		}
		fmt.Fprintf(c.stdout, "accepted %s: %s %s (%s)\n", out.Suggestion.ID, out.Memory.Type, out.Memory.ID, out.Suggestion.Status)
		return nil
	})
}

func suggestionResolve(ctx context.Context, c *cli, args []string, to processing.Status) error {
	verb := map[processing.Status]string{processing.Rejected: "reject", processing.Dismissed: "dismiss"}[to]
	fs := c.flags("suggestions "+verb, "ID [--reason TEXT]",
		fmt.Sprintf("Mark a pending suggestion %s; nothing is created (--json: the object POST /suggestions/{id}/%s returns).", to, verb))
	reason := fs.String("reason", "", "why, kept with the suggestion")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		sg, err := st.app.Pipeline.Resolve(ctx, st.meta(), pos[0], to, *reason)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(sg)
		}
		fmt.Fprintf(c.stdout, "%s %s\n", sg.Status, sg.ID)
		return nil
	})
}

func anxietyCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("anxiety", "", "Score how much the stack needs attention, per dimension, with recommendations (--json: the object GET /agents/{id}/anxiety returns).")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		rep, err := st.app.Queries.Anxiety(ctx, localUserID, st.name)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(rep)
		}
		fmt.Fprintf(c.stdout, "overall %d (%s, confidence %.2f)\n", rep.OverallScore, rep.OverallLevel, rep.OverallConfidence)
		names := make([]string, 0, len(rep.Dimensions))
		for name := range rep.Dimensions {
			names = append(names, name)
		}
		sort.Strings(names)
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		for _, name := range names {
			d, err := json.Marshal(rep.Dimensions[name])
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "  %s\t%s\n", name, oneLine(d))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range rep.Recommendations {
			d, err := json.Marshal(r)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "recommendation: %s\n", oneLine(d))
		}
		return nil
	})
}

func auditCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("audit", "[--account] [--limit N] [--before CURSOR]", "List the stack's audit trail, newest first (--json: the object GET /agents/{id}/audit returns); "+
		"with --account the account-level trail of the stack's owner (\"local\") instead (--json: the object GET /audit returns).")
	account := fs.Bool("account", false, "the account-level entries (agents created and deleted, keys, sessions) instead of the stack's")
	limit := fs.Int("limit", audit.DefaultLimit, fmt.Sprintf("at most this many (1-%d)", audit.MaxLimit))
	before := fs.String("before", "", "next_before of the previous page")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *limit < 1 || *limit > audit.MaxLimit {
		return domain.Invalid("limit", "--limit must be between 1 and %d, got %d", audit.MaxLimit, *limit)
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		q := audit.Query{UserID: localUserID, AgentID: st.name, Before: *before, Limit: *limit}
		if *account {
			q.AgentID = ""
		}
		page, err := st.app.Queries.Audit(ctx, q)
		if err != nil {
			return err
		}
		if page.Entries == nil {
			page.Entries = []audit.Entry{}
		}
		if c.json {
			var next *string
			if page.NextBefore != "" {
				next = &page.NextBefore
			}
			return c.printJSON(map[string]any{"entries": page.Entries, "next_before": next})
		}
		now := time.Now()
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WHEN\tOPERATION\tTYPE\tMEMORY\tACTOR")
		for _, e := range page.Entries {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", relativeTime(e.At, now), e.Operation, e.MemoryType, e.MemoryID, e.Actor)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if page.NextBefore != "" {
			more := "engram audit --before "
			if *account {
				more = "engram audit --account --before "
			}
			c.notice("more: %s%s", more, page.NextBefore)
		}
		return nil
	})
}

func statsCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("stats", "", "Counts of the stack's memories by type, tier and protection (--json: the object GET /agents/{id}/stats returns).")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		s, err := st.app.Queries.Stats(ctx, localUserID, st.name)
		if err != nil {
			return err
		}
		return c.printObject(s)
	})
}

const settingsUsage = `Usage: engram [-s STACK] settings [get]
       engram [-s STACK] settings set KEY VALUE [KEY VALUE]…

The stack's settings (GET/PATCH /agents/{id}/settings). KEY is a setting's
name, a dot between an object and its field: stack_state, enforce_provenance,
lazy_decay, lint_rules.min_length, promotion_gates.belief_min_confidence, …
VALUE is JSON (true, 10, 0.7) or else a string (active, maintenance).
Run 'engram settings <subcommand> --help' for the flags.
`

func settingsCommand(ctx context.Context, c *cli, args []string) error {
	if c.isHelp(args, settingsUsage) {
		return errHelpShown
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return settingsGet(ctx, c, args)
	}
	switch args[0] {
	case "get":
		return settingsGet(ctx, c, args[1:])
	case "set":
		return settingsSet(ctx, c, args[1:])
	}
	return usageErrorf("settings: unknown subcommand %q (get, set)", args[0])
}

func settingsGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("settings get", "", "Show the stack's settings (--json: the object GET /agents/{id}/settings returns).")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		v, err := st.app.Queries.Settings(ctx, localUserID, st.name)
		if err != nil {
			return err
		}
		return c.printObject(v)
	})
}

func settingsSet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("settings set", "KEY VALUE [KEY VALUE]…", "Change settings; the rest stay (--json: the object PATCH /agents/{id}/settings returns). "+
		"Setting stack_state to maintenance refuses every memory write until it is set back.")
	pos, err := c.parse(fs, args, 2, -1)
	if err != nil {
		return err
	}
	patch, err := keyValuePatch(pos)
	if err != nil {
		return err
	}
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		v, err := st.app.Memories.PatchSettings(ctx, st.meta(), st.name, patch)
		if err != nil {
			return err
		}
		return c.printObject(v)
	})
}

const processingUsage = `Usage: engram [-s STACK] processing [get]
       engram [-s STACK] processing set KEY VALUE [KEY VALUE]…

The stack's processing configuration (GET/PATCH /agents/{id}/processing).
KEY is auto_promote, suggestion_expiry_hours or layers.TRANSITION.FIELD,
e.g. layers.raw_to_episode.quantity_threshold 3 or
layers.episode_to_goal.enabled false. VALUE is JSON, or else a string.
Run 'engram processing <subcommand> --help' for the flags.
`

func processingCommand(ctx context.Context, c *cli, args []string) error {
	if c.isHelp(args, processingUsage) {
		return errHelpShown
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return processingGet(ctx, c, args)
	}
	switch args[0] {
	case "get":
		return processingGet(ctx, c, args[1:])
	case "set":
		return processingSet(ctx, c, args[1:])
	}
	return usageErrorf("processing: unknown subcommand %q (get, set)", args[0])
}

func processingGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("processing get", "", "Show the processing configuration, processor, triggers and recent runs (--json: the object GET /agents/{id}/processing returns).")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		v, err := st.app.Queries.Processing(ctx, localUserID, st.name)
		return c.printProcessing(v, err)
	})
}

// printProcessing shows the processing view: for people, the settings,
// one line per layer with its trigger state, and the latest runs.
func (c *cli) printProcessing(v query.ProcessingView, err error) error {
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(v)
	}
	fmt.Fprintf(c.stdout, "processor %s (inference %t), auto_promote %t, suggestions expire after %dh, raw entries %d processed / %d not\n\n",
		v.Processor.Model, v.Processor.Inference, v.Config.AutoPromote, v.Config.SuggestionExpiryHours, v.Raw.Processed, v.Raw.Unprocessed)
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tENABLED\tQUANTITY\tVALENCE\tHOURS\tBATCH\tPASSES/DAY\tMODEL\tUNPROCESSED\tDUE")
	for _, tr := range v.Triggers {
		l := v.Config.Layers[tr.Transition]
		due := "no"
		if tr.Fires {
			due = "yes: " + tr.Reason
		}
		fmt.Fprintf(tw, "%s\t%t\t%d\t%g\t%g\t%d\t%d\t%s\t%d\t%s\n", tr.Transition, l.Enabled, l.QuantityThreshold, l.ValenceThreshold, l.TimeThresholdHours, l.BatchSize, l.MaxPassesPerDay, l.Model, tr.Unprocessed, due)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Runs) == 0 {
		return nil
	}
	fmt.Fprintln(c.stdout, "\nlatest runs:")
	now := time.Now()
	tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, r := range v.Runs {
		outcome := fmt.Sprintf("%d sources, %d suggestions", r.SourceCount, len(r.Suggestions))
		if r.Skipped {
			outcome = "skipped: " + r.SkipReason
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", relativeTime(r.At, now), r.Transition, outcome)
	}
	return tw.Flush()
}

func processingSet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("processing set", "KEY VALUE [KEY VALUE]…", "Change the processing configuration; the rest stays (--json: the object PATCH /agents/{id}/processing returns).")
	pos, err := c.parse(fs, args, 2, -1)
	if err != nil {
		return err
	}
	raw, err := keyValuePatch(pos)
	if err != nil {
		return err
	}
	var patch processing.ConfigPatch
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&patch); err != nil {
		return domain.Invalid("", "processing set: %v (keys: auto_promote, suggestion_expiry_hours, layers.TRANSITION.FIELD)", err)
	}
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		if err := st.app.Pipeline.Configure(ctx, st.meta(), st.name, patch); err != nil {
			return err
		}
		return c.printProcessing(st.app.Queries.Processing(ctx, localUserID, st.name))
	})
}

// keyValuePatch turns KEY VALUE pairs into a JSON merge object: a dotted
// key nests (lint_rules.min_length 5 is {"lint_rules":{"min_length":5}}),
// a value that parses as JSON is that value and any other is a string, so
// `stack_state active` needs no quotes.
func keyValuePatch(pairs []string) (json.RawMessage, error) {
	if len(pairs)%2 != 0 {
		return nil, usageErrorf("set: give KEY VALUE pairs; %q has no value", pairs[len(pairs)-1])
	}
	root := map[string]any{}
	for i := 0; i < len(pairs); i += 2 {
		key, text := pairs[i], pairs[i+1]
		var value any
		if err := json.Unmarshal([]byte(text), &value); err != nil {
			value = text
		}
		path := strings.Split(key, ".")
		node := root
		for _, part := range path[:len(path)-1] {
			child, ok := node[part].(map[string]any)
			if !ok {
				if _, taken := node[part]; taken || part == "" {
					return nil, usageErrorf("set: key %q conflicts with another key", key)
				}
				child = map[string]any{}
				node[part] = child
			}
			node = child
		}
		last := path[len(path)-1]
		if _, taken := node[last]; taken || last == "" {
			return nil, usageErrorf("set: key %q is empty or given twice", key)
		}
		node[last] = value
	}
	return json.Marshal(root)
}

func provenanceCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("provenance", "ID [--direction up|down|both] [--depth N]",
		"Show where a memory came from (up) and what was derived from it (down) (--json: the object GET /memories/{id}/provenance returns).")
	direction := fs.String("direction", "both", "up (its sources), down (what was derived from it) or both")
	depth := fs.Int("depth", memory.DefaultProvenanceDepth, fmt.Sprintf("levels to follow (1-%d)", memory.MaxProvenanceDepth))
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *depth < 1 {
		return domain.Invalid("depth", "--depth must be a positive integer, got %d", *depth)
	}
	return c.withStack(ctx, readParts, func(st *localStack) error {
		t, err := st.app.Queries.Provenance(ctx, localUserID, pos[0], *direction, *depth)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"id": t.Memory.ID, "type": t.Memory.Type, "direction": t.Direction, "depth": t.Depth, "up": t.Up, "down": t.Down})
		}
		if t.Up != nil {
			fmt.Fprintln(c.stdout, "up (sources):")
			printProvenance(c.stdout, t.Up, "  ")
		}
		if t.Down != nil {
			fmt.Fprintln(c.stdout, "down (derived):")
			printProvenance(c.stdout, t.Down, "  ")
		}
		return nil
	})
}

// printProvenance draws a provenance tree, one node a line, indented by
// level.
func printProvenance(w io.Writer, n *memory.ProvenanceNode, indent string) {
	mark := ""
	if n.Cycle {
		mark = " (cycle)"
	}
	if n.Truncated {
		mark += " (more beyond --depth)"
	}
	fmt.Fprintf(w, "%s%s %s%s\n", indent, n.Type, n.ID, mark)
	for _, child := range n.Nodes {
		printProvenance(w, child, indent+"  ")
	}
}

// strengthAction is a body-less strength action of commands.Memories.
type strengthAction func(context.Context, domain.Metadata, string, commands.IfMatch) (memory.View, error)

// strengthCommand returns recover, protect or unprotect: a strength action
// on one memory that takes nothing but its id.
func strengthCommand(name, summary string, act func(*localStack) strengthAction) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags(name, "ID", summary+" (--json: the memory object POST /memories/{id}/"+name+" returns).")
		pos, err := c.parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		return c.withStack(ctx, writeParts, func(st *localStack) error {
			v, err := act(st)(ctx, st.meta(), pos[0], nil)
			return c.printStrength(name, v, err)
		})
	}
}

func weakenCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("weaken", "ID [--by X] [--reason TEXT]", "Lower a memory's strength (--json: the memory object POST /memories/{id}/weaken returns).")
	by := fs.Float64("by", 0, "how much, in (0, 1]; default 0.1")
	reason := fs.String("reason", "", "why (at most 500 characters)")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	change := commands.StrengthChange{Reason: *reason}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "by" {
			change.By = by
		}
	})
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		v, err := st.app.Memories.Weaken(ctx, st.meta(), pos[0], change, nil)
		return c.printStrength("weaken", v, err)
	})
}

func verifyCommand(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("verify", "ID [--reason TEXT]", "Record that a memory was checked and still holds: its strength and verification count rise (--json: the memory object POST /memories/{id}/verify returns).")
	reason := fs.String("reason", "", "why (at most 500 characters)")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	return c.withStack(ctx, writeParts, func(st *localStack) error {
		v, err := st.app.Memories.Verify(ctx, st.meta(), pos[0], commands.StrengthChange{Reason: *reason}, nil)
		return c.printStrength("verify", v, err)
	})
}

// printStrength shows the memory a strength action answered with.
func (c *cli) printStrength(action string, v memory.View, err error) error {
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(v)
	}
	var s struct {
		Strength    float64 `json:"strength"`
		Tier        string  `json:"tier"`
		IsProtected bool    `json:"is_protected"`
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	protected := ""
	if s.IsProtected {
		protected = ", protected"
	}
	fmt.Fprintf(c.stdout, "%s %s: strength %.2f (%s%s)\n", action, v.ID, s.Strength, s.Tier, protected)
	return nil
}

// printObject prints v as --json asks, or else one "key  value" line per
// leaf, nested keys joined by dots, for people.
func (c *cli) printObject(v any) error {
	if c.json {
		return c.printJSON(v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	printLeaves(tw, "", tree)
	return tw.Flush()
}

func printLeaves(w io.Writer, prefix string, v any) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		b, _ := json.Marshal(v) // re-encoding a decoded value cannot fail
		text := string(b)
		if s, isString := v.(string); isString {
			text = s
		}
		fmt.Fprintf(w, "%s\t%s\n", prefix, text)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		printLeaves(w, name, m[k])
	}
}

// oneLine is compact JSON for a line of plain output.
func oneLine(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}
