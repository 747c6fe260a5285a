package processing

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/engram-memory/engram/domain/memory"
)

// The rule-based extractor (digest §3.5) classifies raw entries with
// weighted regular-expression families, without a model. A family's score
// is min(1, matched weight / (0.5 × family weight)); a raw entry becomes
// the best family scoring at least RuleThreshold, a note only when
// neither episode nor belief qualifies. It serves the raw transitions
// only: raw_to_episode takes the entries classified as episodes,
// raw_to_note the notes and beliefs.

// RuleThreshold is the score a family needs.
const RuleThreshold = 0.4

// ruleMinLength: shorter raw entries are ignored.
const ruleMinLength = 10

type rulePattern struct {
	re     *regexp.Regexp
	weight float64
}

type ruleFamily struct {
	typ      memory.Type
	patterns []rulePattern
}

func (f ruleFamily) total() float64 {
	t := 0.0
	for _, p := range f.patterns {
		t += p.weight
	}
	return t
}

func (f ruleFamily) score(text string) float64 {
	matched := 0.0
	for _, p := range f.patterns {
		if p.re.MatchString(text) {
			matched += p.weight
		}
	}
	return math.Min(1, matched/(0.5*f.total()))
}

func pattern(expr string, w float64) rulePattern {
	return rulePattern{re: regexp.MustCompile(`(?i)` + expr), weight: w}
}

// RuleExtractor is the built-in processor that needs no model.
type RuleExtractor struct {
	// rules are compiled at the first classification, not by
	// NewRuleExtractor: every local command that reads or writes builds
	// the processor (its Info names the processing view's model), and
	// compiling the 22 patterns was ~0.5 ms of each such process.
	rules func() *ruleSet
}

// ruleSet is the extractor's compiled patterns.
type ruleSet struct {
	episode, belief, note ruleFamily
	beliefLead            *regexp.Regexp
}

// NewRuleExtractor builds the extractor (its patterns total 4.5 for
// episodes, 4.7 for beliefs and 4.2 for notes, as in Kernle).
func NewRuleExtractor() *RuleExtractor {
	return &RuleExtractor{rules: sync.OnceValue(compileRules)}
}

func compileRules() *ruleSet {
	return &ruleSet{
		episode: ruleFamily{memory.Episode, []rulePattern{
			pattern(`\b(i|we) (did|completed|finished|fixed|deployed|shipped|built|implemented|released|migrated)\b`, 1.0),
			pattern(`\b(today|yesterday|this morning|last week|earlier)\b`, 0.6),
			pattern(`\b(worked on|tried|attempted|started)\b`, 0.6),
			pattern(`\b(succeeded|failed|worked|broke|resolved)\b`, 0.7),
			pattern(`\b(learned|realized|discovered|found out)\b`, 0.6),
			pattern(`\b(meeting|session|debugging|incident|deploy(ment)?)\b`, 0.5),
			pattern(`\b(after|then|finally)\b`, 0.5),
		}},
		belief: ruleFamily{memory.Belief, []rulePattern{
			pattern(`\bi (think|believe|feel that|suspect)\b`, 0.8),
			pattern(`\b(always|never|usually|generally|typically)\b`, 0.6),
			pattern(`\b(should|must|ought to)\b`, 0.7),
			pattern(`\b(is better than|is worse than|works best|is the best)\b`, 0.7),
			pattern(`\b(in my (opinion|experience)|it seems)\b`, 0.7),
			pattern(`\b(because|therefore|so that|leads to|causes)\b`, 0.6),
			pattern(`\b(important|matters|key to)\b`, 0.6),
		}},
		note: ruleFamily{memory.Note, []rulePattern{
			pattern(`\b(note|remember|reminder|todo|fyi)\b`, 0.8),
			pattern(`https?://`, 0.6),
			pattern(`\b(documentation|docs|reference|link|see)\b`, 0.5),
			pattern(`\b(command|run|install|configure|config)\b`, 0.6),
			pattern(`(\bstep \d|\bfirst,|\bnext,|\bfinally,)`, 0.6),
			pattern(`\b(\d{4}-\d{2}-\d{2}|version|v\d+)\b`, 0.5),
			pattern(`\b(called|named|located|defined as|means)\b`, 0.6),
		}},
		beliefLead: regexp.MustCompile(`(?i)^\s*i (think|believe|feel that|suspect)( that)?\s+`),
	}
}

// Info describes the extractor as a processor.
func (r *RuleExtractor) Info() ProcessorInfo { return ProcessorInfo{Model: RulesModel} }

// Propose is Extract as a processor: it never fails and ignores known.
func (r *RuleExtractor) Propose(_ context.Context, t Transition, batch, _ []Source) ([]Item, []error, error) {
	return r.Extract(t, batch), nil, nil
}

// Classify returns the type a raw text suggests and its score, or "" when
// no family qualifies.
func (r *RuleExtractor) Classify(text string) (memory.Type, float64) {
	if len(strings.TrimSpace(text)) < ruleMinLength {
		return "", 0
	}
	set := r.rules()
	ep, be := set.episode.score(text), set.belief.score(text)
	switch {
	case ep >= RuleThreshold && ep >= be:
		return memory.Episode, ep
	case be >= RuleThreshold:
		return memory.Belief, be
	}
	if n := set.note.score(text); n >= RuleThreshold {
		return memory.Note, n
	}
	return "", 0
}

// Extract proposes items for a raw transition's batch.
func (r *RuleExtractor) Extract(t Transition, batch []Source) []Item {
	var items []Item
	for _, s := range batch {
		typ, score := r.Classify(s.Text)
		var content any
		conf := DefaultItemConfidence
		switch {
		case t == RawToEpisode && typ == memory.Episode:
			content = map[string]any{"objective": truncate(s.Text, 200), "outcome": "not recorded (extracted by rules)", "outcome_type": "unknown"}
		case t == RawToNote && typ == memory.Belief:
			statement := r.rules().beliefLead.ReplaceAllString(truncate(s.Text, 500), "")
			conf = math.Round(math.Min(0.8, score)*10000) / 10000
			content = map[string]any{"statement": statement, "belief_type": "fact", "confidence": conf}
		case t == RawToNote && typ == memory.Note:
			content = map[string]any{"content": s.Text, "note_type": "note"}
		default:
			continue
		}
		raw, _ := json.Marshal(content)
		canon, err := normalizeProcessed(typ, raw)
		if err != nil {
			continue // e.g. a raw text longer than a content limit: leave it to a model
		}
		items = append(items, Item{Type: typ, Content: canon, Confidence: conf, Sources: []string{s.ID}})
	}
	return items
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
