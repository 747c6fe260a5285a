package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/engram-memory/engram/domain/memory"
)

// summaryRunes is how much of a memory's text one line of a listing shows.
const summaryRunes = 72

// summary is a memory's indexed text (what search sees) on one line,
// truncated for a listing.
func summary(t memory.Type, content json.RawMessage) string {
	text, err := memory.IndexedText(t, content)
	if err != nil || text == "" {
		text = string(content)
	}
	return truncate(strings.Join(strings.Fields(text), " "), summaryRunes)
}

// truncate cuts s to n runes, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// relativeTime says how long ago t was, for people: "just now", "5m ago",
// "3h ago", "2d ago", then the date.
func relativeTime(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
	return t.UTC().Format("2006-01-02")
}

// contentFields lists a content object's fields as name/value text pairs
// in name order; lists are joined, objects shown as JSON.
func contentFields(content json.RawMessage) [][2]string {
	var m map[string]json.RawMessage
	if json.Unmarshal(content, &m) != nil {
		return [][2]string{{"content", string(content)}}
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([][2]string, 0, len(names))
	for _, k := range names {
		out = append(out, [2]string{k, fieldText(m[k])})
	}
	return out
}

func fieldText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, "; ")
	}
	return string(bytes.TrimSpace(raw))
}
