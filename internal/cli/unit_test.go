package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/client"
)

func TestCloudFailureSaysWhyAndWhetherToFallBack(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	cases := []struct {
		name       string
		err        error
		wantReason string
		fallback   bool
	}{
		{"network error", fmt.Errorf("client: POST /search: %w", refused), "cloud unreachable (connect: connection refused)", true},
		{"deadline", fmt.Errorf("client: POST /search: %w", context.DeadlineExceeded), "cloud unreachable (no answer within 3s)", true},
		{"server error", &client.Error{Status: 503, Code: "provider_unavailable"}, "cloud unavailable (HTTP 503 provider_unavailable)", true},
		{"proxy error without a code", &client.Error{Status: 502}, "cloud unavailable (HTTP 502)", true},
		{"rejected key", &client.Error{Status: 401, Code: "unauthorized"}, "cloud rejected the credentials (HTTP 401; run engram auth login)", true},
		{"rate limited", &client.Error{Status: 429, Code: "rate_limited"}, "cloud rate limit reached (HTTP 429)", true},
		{"bad request is the user's to fix", &client.Error{Status: 400, Code: "invalid_request"}, "", false},
		{"insecure URL is never worked around", client.ErrInsecureURL, "", false},
		{"no error", nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, fallback := cloudFailure(tc.err, 3*time.Second)
			if reason != tc.wantReason || fallback != tc.fallback {
				t.Fatalf("cloudFailure = (%q, %v), want (%q, %v)", reason, fallback, tc.wantReason, tc.fallback)
			}
		})
	}
}

func TestMergeResultsKeepsUnpushedLocalMemories(t *testing.T) {
	at := func(min int) time.Time { return time.Date(2026, 1, 1, 0, min, 0, 0, time.UTC) }
	result := func(id, source string, score float64, created time.Time) searchResultJSON {
		return searchResultJSON{SearchResult: client.SearchResult{ID: id, Score: score, CreatedAt: created}, Source: source}
	}
	cloud := searchOutputJSON{Source: sourceCloud, Results: []searchResultJSON{
		result("shared", sourceCloud, 0.9, at(1)), result("cloud-only", sourceCloud, 0.5, at(2)),
	}}
	cases := []struct {
		name       string
		local      []searchResultJSON
		limit      int
		wantIDs    string
		wantSource string
	}{
		{"a memory both sides have is listed once, from the cloud",
			[]searchResultJSON{result("shared", sourceLocal, 0.95, at(1))}, 10, "shared:cloud cloud-only:cloud", sourceCloud},
		{"an unpushed local memory is merged in by score",
			[]searchResultJSON{result("unpushed", sourceLocal, 0.7, at(3))}, 10, "shared:cloud unpushed:local cloud-only:cloud", sourceCloudLocal},
		{"equal scores go to the newer memory",
			[]searchResultJSON{result("newer", sourceLocal, 0.5, at(9))}, 10, "shared:cloud newer:local cloud-only:cloud", sourceCloudLocal},
		{"the limit applies after merging",
			[]searchResultJSON{result("unpushed", sourceLocal, 0.7, at(3))}, 2, "shared:cloud unpushed:local", sourceCloudLocal},
		{"no local results leave the cloud's answer", nil, 10, "shared:cloud cloud-only:cloud", sourceCloud},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := cloud
			in.Results = append([]searchResultJSON(nil), cloud.Results...)
			got := mergeResults(in, searchOutputJSON{Results: tc.local}, tc.limit)
			var ids []string
			for _, r := range got.Results {
				ids = append(ids, r.ID+":"+r.Source)
			}
			if strings.Join(ids, " ") != tc.wantIDs || got.Source != tc.wantSource || got.Total != len(got.Results) {
				t.Fatalf("merged = %v (source %s, total %d), want %s (source %s)", ids, got.Source, got.Total, tc.wantIDs, tc.wantSource)
			}
		})
	}
}

func TestRelativeTimeAndTruncate(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{10 * time.Second, "just now"}, {5 * time.Minute, "5m ago"}, {3 * time.Hour, "3h ago"},
		{50 * time.Hour, "2d ago"}, {40 * 24 * time.Hour, "2026-01-29"}, {-time.Hour, "in the future"},
	} {
		if got := relativeTime(now.Add(-tc.ago), now); got != tc.want {
			t.Errorf("relativeTime(-%s) = %q, want %q", tc.ago, got, tc.want)
		}
	}
	if got := truncate("héllo wörld", 6); got != "héllo…" {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("short", 6); got != "short" {
		t.Errorf("truncate = %q", got)
	}
}

func TestFieldFlagNamesTheFlagOfAnAPIField(t *testing.T) {
	for field, want := range map[string]string{
		"content.objective": "--objective", "content.emotional_valence": "--emotional-valence", "content.steps[2].action": "--steps",
		"tags": "--tag", "derived_from": "--derived-from", "created_at": "--created-at", "types": "--type", "agent_id": "-s/--stack", "limit": "",
	} {
		if got := fieldFlag(field); got != want {
			t.Errorf("fieldFlag(%q) = %q, want %q", field, got, want)
		}
	}
}

func TestParseGlobalOptions(t *testing.T) {
	cases := []struct {
		args      []string
		wantStack string
		wantRest  string
		wantJSON  bool
		wantErr   bool
	}{
		{[]string{"-s", "work", "list"}, "work", "list", false, false},
		{[]string{"--stack=work", "--json", "list", "-s", "x"}, "work", "list -s x", true, false},
		{[]string{"--quiet", "search", "q"}, "", "search q", false, false},
		{[]string{"-s"}, "", "", false, true},
		{[]string{"--colour", "list"}, "", "", false, true},
	}
	for _, tc := range cases {
		c := &cli{}
		rest, err := c.parseGlobal(tc.args)
		if (err != nil) != tc.wantErr {
			t.Fatalf("parseGlobal(%v) error %v", tc.args, err)
		}
		if err == nil && (c.stack != tc.wantStack || strings.Join(rest, " ") != tc.wantRest || c.json != tc.wantJSON) {
			t.Fatalf("parseGlobal(%v) = stack %q rest %v json %v", tc.args, c.stack, rest, c.json)
		}
	}
}
