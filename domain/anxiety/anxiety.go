// Package anxiety computes a memory stack's anxiety report: how much
// unfinished cognitive work (unreflected episodes, aging raw entries,
// uncertain beliefs, a thin identity, pending suggestions, missing
// vectors) the stack carries. It is pure: callers gather Inputs from read
// models and pass the clock in, so a report never writes anything.
//
// The formulas, integer truncation, confidence tiers and level bands are
// Kernle's (research digest §2). Kernle's context_pressure, unsaved_work
// and epoch_staleness need inputs this service does not have (a context
// window, checkpoints, epochs); they are replaced by suggestion_backlog
// and embedding_backlog, and the weights renormalised.
package anxiety

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Dimension names, in report order.
const (
	ConsolidationDebt = "consolidation_debt"
	RawAging          = "raw_aging"
	IdentityCoherence = "identity_coherence"
	MemoryUncertainty = "memory_uncertainty"
	SuggestionBacklog = "suggestion_backlog"
	EmbeddingBacklog  = "embedding_backlog"
)

// Weights are in hundredths, before renormalisation: Kernle's 7-dimension
// weights for the four dimensions kept (0.15, 0.10, 0.10, 0.10), plus 0.10
// and 0.05 for the two replacements. The overall score divides by their
// sum (WeightTotal), in integers, so it truncates exactly as int(Σ s·w).
var weights = []struct {
	name   string
	weight int
}{
	{ConsolidationDebt, 15},
	{RawAging, 10},
	{IdentityCoherence, 10},
	{MemoryUncertainty, 10},
	{SuggestionBacklog, 10},
	{EmbeddingBacklog, 5},
}

// WeightTotal is the sum of the raw weights (hundredths).
const WeightTotal = 60

// Weight returns a dimension's renormalised weight (its share of 1).
func Weight(name string) float64 {
	for _, w := range weights {
		if w.name == name {
			return float64(w.weight) / WeightTotal
		}
	}
	return 0
}

// Window sizes: how many of the latest memories each dimension looks at.
const (
	LatestWindow          = 100 // episodes, beliefs and raw entries
	IdentityBeliefWindow  = 20
	IdentityEpisodeWindow = 50
	RawAgingAfter         = 24 * time.Hour
)

// Episode is what the report needs of one episode.
type Episode struct {
	HasLessons bool
	// Checkpoint is true when the episode carries the "checkpoint" tag;
	// such episodes are bookkeeping, not debt.
	Checkpoint bool
}

// Raw is what the report needs of one unprocessed raw entry.
type Raw struct {
	Length     int // characters of content
	CapturedAt time.Time
}

// Inputs is everything the report reads. Slices hold the latest memories
// first; the report cuts them to its windows itself.
type Inputs struct {
	Now            time.Time
	Episodes       []Episode
	BeliefConfs    []float64 // confidence of each belief
	UnprocessedRaw []Raw
	// ValuePriorities holds each value's priority (1-100).
	ValuePriorities []int
	ActiveGoals     int
	Drives          int
	Relationships   int
	// PendingSuggestions counts suggestions waiting for a decision.
	PendingSuggestions int
	// Searchable counts the searchable, not forgotten memories;
	// EmbedPending those among them whose current text has no vector yet.
	Searchable   int
	EmbedPending int
	// Previous is the level last recorded for the agent, nil when none
	// was: the starting point of the hysteresis.
	Previous *Observation
}

// Observation is a level recorded for an agent, and when.
type Observation struct {
	Level string    `json:"level"`
	At    time.Time `json:"at"`
}

// DimensionReport is one dimension's part of the report.
type DimensionReport struct {
	Score      int     `json:"score"`
	Confidence float64 `json:"confidence"`
	RawValue   float64 `json:"raw_value"`
	Detail     string  `json:"detail"`
	Weight     float64 `json:"weight"`
}

// Recommendation is one suggested action.
type Recommendation struct {
	Priority    string `json:"priority"` // low | medium | high | critical
	Dimension   string `json:"dimension,omitempty"`
	Description string `json:"description"`
}

// Report is the anxiety report.
type Report struct {
	OverallScore      int     `json:"overall_score"`
	OverallLevel      string  `json:"overall_level"`
	OverallConfidence float64 `json:"overall_confidence"`
	// PreviousLevel is the level last recorded for the agent (nil: none
	// yet); HysteresisLevel walks from it by the score, one level at a
	// time (see HysteresisLevel). Without a previous level it equals
	// OverallLevel.
	PreviousLevel   *Observation               `json:"previous_level"`
	HysteresisLevel string                     `json:"hysteresis_level"`
	Dimensions      map[string]DimensionReport `json:"dimensions"`
	Recommendations []Recommendation           `json:"recommendations"`
	ComputedAt      time.Time                  `json:"computed_at"`
}

// Compute builds the report from in.
func Compute(in Inputs) Report {
	dims := map[string]DimensionReport{
		ConsolidationDebt: consolidationDebt(in.Episodes),
		RawAging:          rawAging(in.UnprocessedRaw, in.Now),
		IdentityCoherence: identityCoherence(in),
		MemoryUncertainty: memoryUncertainty(in.BeliefConfs),
		SuggestionBacklog: suggestionBacklog(in.PendingSuggestions),
		EmbeddingBacklog:  embeddingBacklog(in.Searchable, in.EmbedPending),
	}
	sum, conf := 0, 0.0
	for _, w := range weights {
		d := dims[w.name]
		d.Weight = float64(w.weight) / WeightTotal
		dims[w.name] = d
		sum += d.Score * w.weight
		conf += d.Confidence * float64(w.weight)
	}
	overall := sum / WeightTotal
	return Report{
		OverallScore:      overall,
		OverallLevel:      Level(overall),
		OverallConfidence: math.Round(conf/WeightTotal*100) / 100,
		PreviousLevel:     in.Previous,
		HysteresisLevel:   HysteresisLevel(previousLevel(in.Previous), overall),
		Dimensions:        dims,
		Recommendations:   recommend(overall, dims),
		ComputedAt:        in.Now.UTC(),
	}
}

// Levels, calmest first.
const (
	Calm     = "Calm"
	Aware    = "Aware"
	Elevated = "Elevated"
	High     = "High"
	Critical = "Critical"
)

// levels holds each level with its hysteresis thresholds (digest §2.3):
// a stack at the level below enters it at a score ≥ enter; a stack at it
// leaves it downward at a score < exit.
var levels = []struct {
	name        string
	enter, exit int
}{
	{Calm, 0, 0},
	{Aware, 35, 25},
	{Elevated, 55, 45},
	{High, 75, 65},
	{Critical, 90, 80},
}

// HysteresisLevel is the level a stack at previous moves to for score:
// one level up when the score reaches the next level's enter threshold,
// one level down when it falls below the current level's exit threshold,
// else it stays. The wide gaps keep a score that wobbles around a band
// edge from flipping the level each time. An empty or unknown previous
// level means there is none: the band of the score applies.
func HysteresisLevel(previous string, score int) string {
	at := -1
	for i, l := range levels {
		if l.name == previous {
			at = i
		}
	}
	switch {
	case at < 0:
		return Level(score)
	case at+1 < len(levels) && score >= levels[at+1].enter:
		return levels[at+1].name
	case at > 0 && score < levels[at].exit:
		return levels[at-1].name
	}
	return levels[at].name
}

func previousLevel(o *Observation) string {
	if o == nil {
		return ""
	}
	return o.Level
}

// Level names the band of a 0-100 score: Calm 0-30, Aware 31-50,
// Elevated 51-70, High 71-85, Critical 86-100. It ignores history; the
// report's HysteresisLevel follows the stack's recorded level.
func Level(score int) string {
	switch {
	case score <= 30:
		return Calm
	case score <= 50:
		return Aware
	case score <= 70:
		return Elevated
	case score <= 85:
		return High
	default:
		return Critical
	}
}

// Confidence is the data-sufficiency tier of a dimension computed from n
// samples: 0 → 0, 1-2 → 0.5, 3-5 → 0.7, 6 or more → 0.9.
func Confidence(n int) float64 {
	switch {
	case n <= 0:
		return 0
	case n <= 2:
		return 0.5
	case n <= 5:
		return 0.7
	default:
		return 0.9
	}
}

// clampInt truncates v toward zero and clamps it to 0-100.
func clampInt(v float64) int {
	i := int(v)
	if i < 0 {
		return 0
	}
	if i > 100 {
		return 100
	}
	return i
}

// ConsolidationScore: n≤3: 7n; ≤7: 21+10(n−3); ≤15: 61+4(n−7); else
// min(100, 93+0.5(n−15)).
func ConsolidationScore(n int) int {
	f := float64(n)
	switch {
	case n <= 3:
		return clampInt(7 * f)
	case n <= 7:
		return clampInt(21 + 10*(f-3))
	case n <= 15:
		return clampInt(61 + 4*(f-7))
	default:
		return clampInt(math.Min(100, 93+0.5*(f-15)))
	}
}

func consolidationDebt(eps []Episode) DimensionReport {
	if len(eps) > LatestWindow {
		eps = eps[:LatestWindow]
	}
	n := 0
	for _, e := range eps {
		if !e.HasLessons && !e.Checkpoint {
			n++
		}
	}
	return DimensionReport{
		Score: ConsolidationScore(n), Confidence: Confidence(n), RawValue: float64(n),
		Detail: fmt.Sprintf("%d of the latest %d episodes have no lessons", n, len(eps)),
	}
}

// UncertaintyScore: n≤2: 15n; ≤5: 30+15(n−2); else min(100, 75+5(n−5)).
func UncertaintyScore(n int) int {
	f := float64(n)
	switch {
	case n <= 2:
		return clampInt(15 * f)
	case n <= 5:
		return clampInt(30 + 15*(f-2))
	default:
		return clampInt(math.Min(100, 75+5*(f-5)))
	}
}

func memoryUncertainty(confs []float64) DimensionReport {
	if len(confs) > LatestWindow {
		confs = confs[:LatestWindow]
	}
	n := 0
	for _, c := range confs {
		if c < 0.5 {
			n++
		}
	}
	return DimensionReport{
		Score: UncertaintyScore(n), Confidence: Confidence(len(confs)), RawValue: float64(n),
		Detail: fmt.Sprintf("%d of the latest %d beliefs have confidence below 0.5", n, len(confs)),
	}
}

// RawAgingScore takes the length-weighted totals, already rounded:
// total=0 → 0; aging=0 → min(30, 3·total); aging≤3: 30+15·aging; ≤7:
// 60+8(aging−3); else min(100, 92+(aging−7)).
func RawAgingScore(total, aging int) int {
	a := float64(aging)
	switch {
	case total == 0:
		return 0
	case aging == 0:
		return clampInt(math.Min(30, 3*float64(total)))
	case aging <= 3:
		return clampInt(30 + 15*a)
	case aging <= 7:
		return clampInt(60 + 8*(a-3))
	default:
		return clampInt(math.Min(100, 92+(a-7)))
	}
}

// RawWeight weighs a raw entry by its length: short fragments weigh less
// than real notes (<20 characters 0.3, up to 200 0.7, longer 1.0).
func RawWeight(length int) float64 {
	switch {
	case length < 20:
		return 0.3
	case length <= 200:
		return 0.7
	default:
		return 1.0
	}
}

func rawAging(raws []Raw, now time.Time) DimensionReport {
	if len(raws) > LatestWindow {
		raws = raws[:LatestWindow]
	}
	total, aging := 0.0, 0.0
	for _, r := range raws {
		w := RawWeight(r.Length)
		total += w
		if now.Sub(r.CapturedAt) > RawAgingAfter {
			aging += w
		}
	}
	// Python's round() rounds half to even; so does this, to stay Kernle's.
	t, a := int(math.RoundToEven(total)), int(math.RoundToEven(aging))
	return DimensionReport{
		Score: RawAgingScore(t, a), Confidence: Confidence(len(raws)), RawValue: float64(a),
		Detail: fmt.Sprintf("%d unprocessed raw entries (weighted %d), %d weighted older than 24h", len(raws), t, a),
	}
}

// IdentityConfidence is Kernle's 7-dimension identity confidence, rounded
// to 3 decimals: values 20% × (0.6·min(1,n/5) + 0.4·avg priority/100);
// beliefs 20% × (0.5·min(1,n/10) + 0.5·avg confidence) over the latest 20;
// goals 15% × min(1, active/5); episodes 20% × (0.5·min(1,n/20) + 0.5·share
// with lessons) over the latest 50; drives 15% × min(1,n/3);
// relationships 10% × min(1,n/5).
func IdentityConfidence(in Inputs) float64 {
	c := 0.0
	if n := len(in.ValuePriorities); n > 0 {
		sum := 0
		for _, p := range in.ValuePriorities {
			sum += p
		}
		c += 0.20 * (0.6*math.Min(1, float64(n)/5) + 0.4*float64(sum)/float64(n)/100)
	}
	beliefs := in.BeliefConfs
	if len(beliefs) > IdentityBeliefWindow {
		beliefs = beliefs[:IdentityBeliefWindow]
	}
	if n := len(beliefs); n > 0 {
		sum := 0.0
		for _, b := range beliefs {
			sum += b
		}
		c += 0.20 * (0.5*math.Min(1, float64(n)/10) + 0.5*sum/float64(n))
	}
	c += 0.15 * math.Min(1, float64(in.ActiveGoals)/5)
	eps := in.Episodes
	if len(eps) > IdentityEpisodeWindow {
		eps = eps[:IdentityEpisodeWindow]
	}
	if n := len(eps); n > 0 {
		with := 0
		for _, e := range eps {
			if e.HasLessons {
				with++
			}
		}
		c += 0.20 * (0.5*math.Min(1, float64(n)/20) + 0.5*float64(with)/float64(n))
	}
	c += 0.15 * math.Min(1, float64(in.Drives)/3)
	c += 0.10 * math.Min(1, float64(in.Relationships)/5)
	return math.Round(c*1000) / 1000
}

func identityCoherence(in Inputs) DimensionReport {
	conf := IdentityConfidence(in)
	values := len(in.ValuePriorities)
	if values > 10 {
		values = 10
	}
	samples := values + min(IdentityBeliefWindow, len(in.BeliefConfs))
	return DimensionReport{
		Score: clampInt(100 * (1 - conf)), Confidence: Confidence(samples), RawValue: conf,
		Detail: fmt.Sprintf("identity confidence %.3f", conf),
	}
}

// SuggestionBacklogScore scores n pending suggestions: n≤3: 5n; ≤10:
// 15+5(n−3); ≤30: 50+2(n−10); else min(100, 90+0.5(n−30)). A handful is
// normal; dozens mean nobody reviews what processing proposes.
func SuggestionBacklogScore(n int) int {
	f := float64(n)
	switch {
	case n <= 3:
		return clampInt(5 * f)
	case n <= 10:
		return clampInt(15 + 5*(f-3))
	case n <= 30:
		return clampInt(50 + 2*(f-10))
	default:
		return clampInt(math.Min(100, 90+0.5*(f-30)))
	}
}

func suggestionBacklog(n int) DimensionReport {
	return DimensionReport{
		Score: SuggestionBacklogScore(n), Confidence: Confidence(n), RawValue: float64(n),
		Detail: fmt.Sprintf("%d suggestions pending review", n),
	}
}

// EmbeddingBacklogScore is the percentage (truncated) of searchable
// memories whose current text has no vector yet: those are invisible to
// vector search.
func EmbeddingBacklogScore(searchable, pending int) int {
	if searchable <= 0 {
		return 0
	}
	return clampInt(float64(pending*100) / float64(searchable))
}

func embeddingBacklog(searchable, pending int) DimensionReport {
	return DimensionReport{
		Score: EmbeddingBacklogScore(searchable, pending), Confidence: Confidence(searchable), RawValue: float64(pending),
		Detail: fmt.Sprintf("%d of %d searchable memories wait for a vector", pending, searchable),
	}
}

// recommend suggests actions for the dimensions that need attention,
// worst first; the priority follows the dimension's own band.
func recommend(overall int, dims map[string]DimensionReport) []Recommendation {
	advice := map[string]string{
		ConsolidationDebt: "reflect on recent episodes: add lessons (or run processing episode_to_belief)",
		RawAging:          "process raw entries: POST /v1/agents/{id}/process",
		IdentityCoherence: "strengthen identity: record values, goals, drives and relationships",
		MemoryUncertainty: "review beliefs with confidence below 0.5",
		SuggestionBacklog: "review pending suggestions: accept, reject or dismiss them",
		EmbeddingBacklog:  "wait for the embedding queue, or check the embedding provider",
	}
	names := make([]string, 0, len(dims))
	for name, d := range dims {
		if d.Score > 30 {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if dims[names[i]].Score != dims[names[j]].Score {
			return dims[names[i]].Score > dims[names[j]].Score
		}
		return names[i] < names[j]
	})
	out := []Recommendation{}
	for _, name := range names {
		out = append(out, Recommendation{Priority: priority(dims[name].Score), Dimension: name, Description: advice[name]})
	}
	if overall > 85 {
		out = append([]Recommendation{{Priority: "critical", Description: "the stack is overloaded: process, review suggestions and consolidate before adding more"}}, out...)
	}
	return out
}

func priority(score int) string {
	switch {
	case score <= 50:
		return "low"
	case score <= 70:
		return "medium"
	case score <= 85:
		return "high"
	default:
		return "critical"
	}
}
