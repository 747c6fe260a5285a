package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/projections/search"
)

// Where a search was answered.
const (
	sourceCloud      = "cloud"
	sourceLocal      = "local"
	sourceCloudLocal = "cloud+local"
)

// searchResultJSON is one result of `engram search --json`: the API's
// result object plus where it came from (cloud or local).
type searchResultJSON struct {
	client.SearchResult
	Source string `json:"source"`
}

// searchOutputJSON is `engram search --json`: the API's search response
// plus source (cloud, local or cloud+local) and, when the cloud could not
// answer, fallback_reason.
type searchOutputJSON struct {
	Results     []searchResultJSON `json:"results"`
	Total       int                `json:"total"`
	QueryTimeMS int64              `json:"query_time_ms"`
	QueryTimeUS int64              `json:"query_time_us"`
	// OpenMS is how long opening the local stack took (present when it
	// was opened); the query times leave it out.
	OpenMS         int64  `json:"open_ms,omitempty"`
	Degraded       string `json:"degraded,omitempty"`
	Source         string `json:"source"`
	FallbackReason string `json:"fallback_reason,omitempty"`
}

// searchArgs is a search as the flags give it, checked once for both
// sides.
type searchArgs struct {
	query         string
	mode          string
	types         []memory.Type
	tags          []string
	limit         int
	minScore      float64
	after, before time.Time
	// includeWeak and includeForgotten let weak or dormant and forgotten
	// memories through.
	includeWeak, includeForgotten bool
}

func searchCommand(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("search", "QUERY… [flags]",
		"Search the stack. With the cloud configured (cloud.base_url and engram auth login) the cloud agent of the same id answers, merged with this stack's results (so memories not pushed yet are never hidden); if the cloud fails (network, timeout, HTTP 5xx, 401, 429) the local stack answers and stderr says why. --local or --cloud force a side.")
	mode := flags.String("mode", "hybrid", "hybrid, vector or keyword")
	var types, tags stringList
	flags.Var(&types, "type", "only this type, plural or singular (repeat or comma-separate for more)")
	flags.Var(&tags, "tag", "only memories with this tag (repeat: all of them)")
	limit := flags.Int("limit", 10, fmt.Sprintf("at most this many results (1-%d)", search.MaxLimit))
	minScore := flags.Float64("min-score", 0, "only results scoring at least this (0-1)")
	after := flags.String("after", "", "only memories created at or after this RFC 3339 time")
	before := flags.String("before", "", "only memories created before this RFC 3339 time")
	localOnly := flags.Bool("local", false, "search only the local stack")
	cloudOnly := flags.Bool("cloud", false, "search only the cloud (exit 3 when it cannot be reached)")
	timeout := flags.Duration("timeout", 0, "how long the cloud may take (default cloud.timeout, else 3s)")
	includeWeak := flags.Bool("include-weak", false, "include weak and dormant memories (strength below 0.5)")
	includeForgotten := flags.Bool("include-forgotten", false, "include forgotten memories")
	pos, err := c.parse(flags, args, 1, -1)
	if err != nil {
		return err
	}
	if *localOnly && *cloudOnly {
		return usageErrorf("search: --local and --cloud exclude each other")
	}
	sa := searchArgs{query: strings.Join(pos, " "), mode: *mode, limit: *limit, minScore: *minScore,
		includeWeak: *includeWeak, includeForgotten: *includeForgotten}
	if sa.types, err = memory.ParseTypeFilter("types", splitCommas(types)); err != nil {
		return err
	}
	if sa.tags, err = memory.NormalizeTags("tags", tags); err != nil {
		return err
	}
	if sa.after, err = parseFlagTime("--after", *after); err != nil {
		return err
	}
	if sa.before, err = parseFlagTime("--before", *before); err != nil {
		return err
	}
	switch {
	case sa.mode != string(search.ModeHybrid) && sa.mode != string(search.ModeVector) && sa.mode != string(search.ModeKeyword):
		return domain.Invalid("mode", "--mode must be hybrid, vector or keyword, not %q", sa.mode)
	case sa.limit < 1 || sa.limit > search.MaxLimit:
		return domain.Invalid("limit", "--limit must be between 1 and %d, got %d", search.MaxLimit, sa.limit)
	case sa.minScore < 0 || sa.minScore > 1:
		return domain.Invalid("min_score", "--min-score must be between 0 and 1, got %g", sa.minScore)
	}

	out, err := c.search(ctx, sa, *localOnly, *cloudOnly, *timeout)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(out)
	}
	printSearch(c, out)
	return nil
}

// search runs sa on the side the flags and the configuration choose.
func (c *cli) search(ctx context.Context, sa searchArgs, localOnly, cloudOnly bool, timeout time.Duration) (searchOutputJSON, error) {
	start := time.Now()
	var cl *cloud
	if !localOnly {
		var err error
		if cl, err = c.loadCloud(); err != nil {
			return searchOutputJSON{}, err
		}
		if cloudOnly && !cl.configured() {
			return searchOutputJSON{}, domain.Errorf(domain.KindUnauthorized, "--cloud: the cloud is not configured (set cloud.base_url and run engram auth login)")
		}
		if timeout <= 0 {
			timeout = cl.settings.timeout
		}
	}
	var out searchOutputJSON
	cloudAnswered := false
	if cl != nil && cl.configured() {
		resp, err := c.searchCloud(ctx, cl, sa, timeout)
		reason, fallback := cloudFailure(err, timeout)
		switch {
		case err == nil:
			cloudAnswered = true
			out = cloudOutput(resp)
		case cloudOnly && fallback && !client.IsStatus(err, http.StatusUnauthorized):
			return out, fmt.Errorf("%w: %s", errCloudUnreachable, reason)
		case cloudOnly || !fallback:
			return out, err
		default:
			out.FallbackReason = reason
			c.notice("engram: %s — searched the local stack", reason)
		}
	}
	if cloudOnly {
		out.QueryTimeMS, out.QueryTimeUS = sinceMS(start)
		return out, nil
	}
	// The local stack answers alone, or adds what the cloud may not have
	// yet: memories captured here and not pushed.
	exists, err := c.stackExists(c.stackName())
	if err != nil {
		return out, err
	}
	if !exists {
		if cloudAnswered {
			out.QueryTimeMS, out.QueryTimeUS = sinceMS(start)
			return out, nil
		}
		return out, errNoStack(c.stackName())
	}
	parts := searchParts
	if sa.mode == string(search.ModeKeyword) {
		parts = keywordParts // no vector index, no embedding model
	}
	st, err := c.openStack(ctx, false, parts)
	if err != nil {
		return out, err
	}
	defer st.close()
	// The open is reported apart (open_ms): query_time_ms is the query's.
	start = start.Add(st.opened)
	local, err := searchLocal(ctx, st, sa)
	if err != nil && !(cloudAnswered && domain.ErrorKind(err) == domain.KindNotFound) {
		return out, err
	}
	if cloudAnswered {
		out = mergeResults(out, local, sa.limit)
	} else {
		local.FallbackReason = out.FallbackReason
		out = local
	}
	out.QueryTimeMS, out.QueryTimeUS = sinceMS(start)
	out.OpenMS = st.opened.Milliseconds()
	return out, nil
}

func sinceMS(start time.Time) (int64, int64) {
	d := time.Since(start)
	return d.Milliseconds(), d.Microseconds()
}

// searchCloud asks the cloud agent of the stack's id, within timeout. An
// agent the cloud does not have yet is an empty answer: the local stack
// still answers.
func (c *cli) searchCloud(ctx context.Context, cl *cloud, sa searchArgs, timeout time.Duration) (*client.SearchResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := client.SearchRequest{AgentID: c.stackName(), Query: sa.query, Limit: sa.limit, MinScore: sa.minScore, Mode: sa.mode, Tags: sa.tags,
		IncludeWeak: sa.includeWeak, IncludeForgotten: sa.includeForgotten}
	for _, t := range sa.types {
		req.Types = append(req.Types, t.Plural())
	}
	if !sa.after.IsZero() {
		req.CreatedAfter = &sa.after
	}
	if !sa.before.IsZero() {
		req.CreatedBefore = &sa.before
	}
	resp, err := cl.client(timeout).Search(ctx, req)
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
		if ce.Code != "not_found" || strings.Contains(ce.Message, "no such endpoint") {
			return nil, domain.Invalid("cloud.base_url", "cloud.base_url %s serves no search endpoint (does it end in /v1?)", cl.settings.baseURL)
		}
		return &client.SearchResponse{}, nil // the cloud has no such agent yet
	}
	return resp, err
}

// cloudFailure says why the cloud did not answer and whether the local
// stack should answer instead: network errors, timeouts, HTTP 5xx, 401
// and 429 fall back; a rejected request (400) is the user's to fix.
func cloudFailure(err error, timeout time.Duration) (reason string, fallback bool) {
	if err == nil {
		return "", false
	}
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Status >= 500:
		return strings.TrimSpace(fmt.Sprintf("cloud unavailable (HTTP %d %s", ce.Status, ce.Code)) + ")", true
	case errors.As(err, &ce) && ce.Status == http.StatusUnauthorized:
		return "cloud rejected the credentials (HTTP 401; run engram auth login)", true
	case errors.As(err, &ce) && ce.Status == http.StatusTooManyRequests:
		return "cloud rate limit reached (HTTP 429)", true
	case errors.As(err, &ce), errors.Is(err, client.ErrInsecureURL):
		return "", false
	case domain.ErrorKind(err) != domain.KindInternal:
		return "", false // a configuration error, ours to report
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("cloud unreachable (no answer within %s)", timeout), true
	}
	return fmt.Sprintf("cloud unreachable (%v)", rootCause(err)), true
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// rootCause is the innermost error, e.g. "connection refused", without the
// URL and method around it.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// cloudOutput turns the cloud's answer into the command's output.
func cloudOutput(resp *client.SearchResponse) searchOutputJSON {
	out := searchOutputJSON{Source: sourceCloud, Degraded: resp.Degraded, Results: make([]searchResultJSON, len(resp.Results))}
	for i, r := range resp.Results {
		out.Results[i] = searchResultJSON{SearchResult: r, Source: sourceCloud}
	}
	out.Total = len(out.Results)
	return out
}

// searchLocal is the search step of a local search: the search service of
// the stack's engine, as the API's POST /search runs it.
func searchLocal(ctx context.Context, st *localStack, sa searchArgs) (searchOutputJSON, error) {
	resp, err := st.app.Search.Search(ctx, search.Request{
		UserID: localUserID, AgentID: st.name, Query: sa.query, Mode: search.Mode(sa.mode), Limit: sa.limit, MinScore: sa.minScore,
		Filter:      search.Filter{Types: sa.types, Tags: sa.tags, CreatedAfter: sa.after, CreatedBefore: sa.before},
		IncludeWeak: sa.includeWeak, IncludeForgotten: sa.includeForgotten,
	})
	if err != nil {
		return searchOutputJSON{}, err
	}
	out := searchOutputJSON{Source: sourceLocal, Degraded: resp.Degraded, Results: make([]searchResultJSON, len(resp.Results))}
	for i, r := range resp.Results {
		out.Results[i] = searchResultJSON{Source: sourceLocal, SearchResult: client.SearchResult{
			Type: string(r.Memory.Type), ID: r.Memory.ID, Score: r.Score, Content: r.Memory.Content, CreatedAt: r.Memory.CreatedAt.UTC(),
			Strength: r.Strength, Forgotten: r.Memory.Vitality.Forgotten,
		}}
	}
	out.Total = len(out.Results)
	return out, nil
}

// mergeResults adds the local results the cloud did not return, by id (a
// pushed memory keeps its id, so it is never listed twice; the cloud's copy
// wins), then orders by score, ties to the newer memory, and keeps limit.
func mergeResults(cloud, local searchOutputJSON, limit int) searchOutputJSON {
	seen := map[string]bool{}
	for _, r := range cloud.Results {
		seen[r.ID] = true
	}
	merged := cloud
	addedLocal := false
	for _, r := range local.Results {
		if !seen[r.ID] {
			merged.Results = append(merged.Results, r)
			addedLocal = true
		}
	}
	sort.SliceStable(merged.Results, func(i, j int) bool {
		a, b := merged.Results[i], merged.Results[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.CreatedAt.After(b.CreatedAt)
	})
	if len(merged.Results) > limit {
		merged.Results = merged.Results[:limit]
	}
	if addedLocal {
		merged.Source = sourceCloudLocal
	}
	merged.Total = len(merged.Results)
	return merged
}

// parseFlagTime reads an RFC 3339 time flag of the year 1970 or later;
// empty is an open bound.
func parseFlagTime(flagName, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, domain.Invalid(strings.TrimPrefix(flagName, "--"), "%s must be an RFC 3339 time such as 2025-01-31T12:00:00Z, got %q", flagName, v)
	}
	// A time before 1970 is refused, as the API refuses it: Go's zero time
	// is the open bound, so --before 0001-01-01T00:00:00Z would find every
	// memory instead of none.
	if t.Year() < domain.EarliestClientYear {
		return time.Time{}, domain.Invalid(strings.TrimPrefix(flagName, "--"), "%s must be a time of the year %d or later, got %s", flagName, domain.EarliestClientYear, v).
			WithDetail("minimum", domain.EarliestClientTime)
	}
	return t, nil
}

// printSearch shows results for people, best first.
func printSearch(c *cli, out searchOutputJSON) {
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORE\tTYPE\tID\tCREATED\tFROM\tTEXT")
	for _, r := range out.Results {
		text := summary(memory.Type(r.Type), r.Content)
		if r.Forgotten {
			text = "[forgotten] " + text
		}
		fmt.Fprintf(tw, "%.3f\t%s\t%s\t%s\t%s\t%s\n", r.Score, r.Type, r.ID, relativeTime(r.CreatedAt, now), r.Source, text)
	}
	tw.Flush()
	if len(out.Results) == 0 {
		c.notice("no results (searched: %s)", out.Source)
	}
}
