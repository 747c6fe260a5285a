package memory

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

func TestValidateAgentID(t *testing.T) {
	tests := []struct {
		id    string
		valid bool
	}{
		{"claire", true},
		{"a", true},
		{"A.b_c-9", true},
		{strings.Repeat("x", 64), true},
		{".hidden", true},
		{"a..b", true},
		{"...x", true},
		{"", false},
		{"with space", false},
		{"slash/no", false},
		{"ünï", false},
		{strings.Repeat("x", 65), false},
		{".", false},
		{"..", false},
		{"...", false},
		{strings.Repeat(".", 64), false},
	}
	for _, tt := range tests {
		err := ValidateAgentID(tt.id)
		if tt.valid {
			if err != nil {
				t.Errorf("ValidateAgentID(%q) = %v, want valid", tt.id, err)
			}
			continue
		}
		assertInvalidField(t, err, "agent_id")
	}
	// Every single byte is judged as the pattern of decisions.md judges it
	// ("." alone is refused as a directory name).
	pattern := regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	for b := range 256 {
		id := "x" + string([]byte{byte(b)})
		if got, want := ValidateAgentID(id) == nil, pattern.MatchString(id); got != want {
			t.Errorf("ValidateAgentID(%q) valid %v, the pattern says %v", id, got, want)
		}
	}
	if AgentStream("u1", "claire") == AgentStream("u2", "claire") {
		t.Error("two users' agents share a stream")
	}
}

func TestNormalizeTags(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
		bad  bool
	}{
		{"nil becomes empty", nil, []string{}, false},
		{"trims and de-duplicates in order", []string{" b", "a", "b ", "a"}, []string{"b", "a"}, false},
		{"empty tag", []string{"ok", " "}, nil, true},
		{"control character", []string{"a\tb"}, nil, true},
		{"too long", []string{strings.Repeat("t", MaxTagChars+1)}, nil, true},
		{"longest allowed", []string{strings.Repeat("é", MaxTagChars)}, []string{strings.Repeat("é", MaxTagChars)}, false},
		{"too many", make([]string, MaxTags+1), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeTags("tags", tt.in)
			if tt.bad {
				assertInvalidField(t, err, "tags")
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NormalizeTags = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	_, err := NormalizeTags("tags", []string{"ok", "", "x"})
	if de, _ := domain.AsError(err); de == nil || de.Details["index"] != 1 {
		t.Errorf("error %v does not carry the tag's index 1", err)
	}
}

func TestParseRefs(t *testing.T) {
	got, err := ParseRefs("derived_from", []string{"episode:1", "notes:2", "raw:3", " agent_values : 4 "})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"episode:1", "note:2", "raw_entry:3", "value:4"}
	if !reflect.DeepEqual(RefStrings(got), want) {
		t.Errorf("refs = %q, want %q", RefStrings(got), want)
	}
	for i, bad := range [][]string{{"episode"}, {"episode:"}, {"diary:1"}, {"note:1", ":2"}} {
		_, err := ParseRefs("derived_from", bad)
		assertInvalidField(t, err, "derived_from")
		if de, _ := domain.AsError(err); de == nil || de.Details["index"] != len(bad)-1 {
			t.Errorf("case %d: error %v does not name index %d", i, err, len(bad)-1)
		}
	}
	err = ErrRefNotFound("derived_from", 2, Ref{Type: Note, ID: "x"})
	assertInvalidField(t, err, "derived_from")
	if de, _ := domain.AsError(err); de.Details["index"] != 2 || de.Details["ref"] != "note:x" {
		t.Errorf("details = %v", de.Details)
	}
}

func TestVectorJSONRoundTrip(t *testing.T) {
	in := Vector{0, 1, -1, 0.5, float32(math.Pi), math.SmallestNonzeroFloat32, math.MaxFloat32}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("a vector is not a JSON string: %s", raw)
	}
	var out Vector
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip = %v, want %v", out, in)
	}
	// Inside an event payload too.
	ev, _ := json.Marshal(MemoryEmbedded{MemoryID: "m", Vector: in})
	var back MemoryEmbedded
	if err := json.Unmarshal(ev, &back); err != nil || !reflect.DeepEqual(back.Vector, in) {
		t.Errorf("event round trip = %v, %v", back.Vector, err)
	}
	// The encoding is fixed: events written before stay readable.
	if string(raw) != `"AAAAAAAAgD8AAIC/AAAAP9sPSUABAAAA//9/fw=="` {
		t.Errorf("wire format changed: %s", raw)
	}
	for _, bad := range []string{`"@@@"`, `"AAA="`, `[1,2]`, `7`} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}
