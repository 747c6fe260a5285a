package memory

import (
	"strings"

	"github.com/engram-memory/engram/domain"
)

// agentIDChars says whether every byte of id is one an agent id may hold:
// A-Z, a-z, 0-9, '.', '_' or '-'. A loop rather than a regular expression,
// which the package would compile at every process start (every command of
// the command line is one).
func agentIDChars(id string) bool {
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidateAgentID checks docs/decisions.md#agent-ids: 1-64 characters of [A-Za-z0-9._-],
// and not only dots: agent ids also name local stacks on disk
// (~/.engram/stacks/<id>), where "." and ".." are not names but the
// directory itself and its parent.
func ValidateAgentID(id string) error {
	if id == "" {
		return domain.Invalid("agent_id", "agent_id is required")
	}
	if len(id) > 64 || !agentIDChars(id) {
		return domain.Invalid("agent_id", "agent_id must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-'")
	}
	if strings.Trim(id, ".") == "" {
		return domain.Invalid("agent_id", "agent_id must not consist of dots only (it also names a directory on disk)")
	}
	return nil
}

// AgentStream is the event stream of one user's agent: every memory event of
// the agent is in it, so a batch is one atomic append.
func AgentStream(userID, agentID string) string {
	return "agent-" + userID + "-" + agentID
}

// NormalizeTags validates tags (at most MaxTags, each 1-MaxTagChars
// characters, no control characters), trims and de-duplicates them keeping
// the first occurrence's order; nil becomes empty.
func NormalizeTags(field string, tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, domain.Invalid(field, "%s holds %d tags; the limit is %d", field, len(tags), MaxTags)
	}
	out := make([]string, 0, len(tags))
	seen := map[string]bool{}
	for i, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || len([]rune(t)) > MaxTagChars || strings.ContainsFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, domain.Invalid(field, "%s[%d] must be 1-%d printable characters", field, i, MaxTagChars).WithDetail("index", i)
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}
