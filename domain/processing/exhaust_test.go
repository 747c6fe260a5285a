package processing_test

import (
	"reflect"
	"testing"

	"github.com/engram-memory/engram/domain/processing"
)

func TestIntensityTransitions(t *testing.T) {
	want := map[processing.Intensity][]processing.Transition{
		processing.Light: {processing.RawToEpisode, processing.RawToNote},
		processing.Medium: {processing.RawToEpisode, processing.RawToNote, processing.EpisodeToBelief, processing.EpisodeToGoal,
			processing.EpisodeToRelationship, processing.EpisodeToDrive},
		processing.Heavy: processing.Transitions(),
	}
	for i, w := range want {
		if got := i.Transitions(); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %v, want %v", i, got, w)
		}
	}
}

func TestCheckExhaustCycles(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 20}, {1, 1}, {100, 100}} {
		if got, err := processing.CheckExhaustCycles(c.in); err != nil || got != c.want {
			t.Errorf("CheckExhaustCycles(%d) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []int{-1, 101} {
		if _, err := processing.CheckExhaustCycles(bad); err == nil {
			t.Errorf("CheckExhaustCycles(%d) accepted", bad)
		}
	}
}

// Each cycle kind, as exhaust sees it.
var (
	productive   = processing.CycleSummary{Sources: 3, Suggestions: 2}
	promoted     = processing.CycleSummary{Sources: 3, Promotions: 1}
	empty        = processing.CycleSummary{}
	noOutput     = processing.CycleSummary{Sources: 4} // an empty answer, or items held by gates
	errorOnly    = processing.CycleSummary{Sources: 4, Errors: 1}
	inferenceOff = processing.CycleSummary{InferenceBlocked: true}
)

// TestExhaustionConvergence: two empty cycles in a row finish an
// intensity (light → medium → heavy → converged); productive and
// error-only cycles reset the count; an all-inference-blocked cycle ends
// the run.
func TestExhaustionConvergence(t *testing.T) {
	cases := []struct {
		name       string
		cycles     []processing.CycleSummary
		intensity  []processing.Intensity // of each cycle
		done       bool
		reason     string
		finalLevel processing.Intensity
	}{
		{"empty stack climbs every intensity", []processing.CycleSummary{empty, empty, empty, empty, empty, empty},
			[]processing.Intensity{"light", "light", "medium", "medium", "heavy", "heavy"}, true, processing.ReasonConverged, "heavy"},
		{"output resets the count", []processing.CycleSummary{productive, empty, promoted, empty, empty},
			[]processing.Intensity{"light", "light", "light", "light", "light"}, false, "", "medium"},
		{"an empty answer counts as empty", []processing.CycleSummary{noOutput, noOutput},
			[]processing.Intensity{"light", "light"}, false, "", "medium"},
		{"error-only cycles reset the count", []processing.CycleSummary{empty, errorOnly, empty},
			[]processing.Intensity{"light", "light", "light"}, false, "", "light"},
		{"inference blocked ends the run", []processing.CycleSummary{productive, empty, empty, inferenceOff},
			[]processing.Intensity{"light", "light", "light", "medium"}, true, processing.ReasonInferenceUnavailable, "medium"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var e processing.Exhaustion
			for i, s := range c.cycles {
				if e.Done {
					t.Fatalf("done before cycle %d", i+1)
				}
				if got := e.Intensity(); got != c.intensity[i] {
					t.Fatalf("cycle %d ran at %s, want %s", i+1, got, c.intensity[i])
				}
				e.Record(s)
			}
			if e.Done != c.done || e.Reason != c.reason || e.Intensity() != c.finalLevel {
				t.Errorf("end: done %t reason %q at %s; want %t %q at %s", e.Done, e.Reason, e.Intensity(), c.done, c.reason, c.finalLevel)
			}
		})
	}
}

func TestSummarizeInferenceBlockedOnlyWhenNothingRan(t *testing.T) {
	blocked := processing.PassRecorded{Pass: processing.Pass{Skipped: true, SkipReason: processing.SkipNeedsInference, InferenceBlocked: true}}
	noSources := processing.PassRecorded{Pass: processing.Pass{Skipped: true, SkipReason: processing.SkipNoSources}}
	ran := processing.PassRecorded{Pass: processing.Pass{SourceCount: 2, Suggestions: []string{"a"}}}
	if s := processing.Summarize(1, processing.Medium, []processing.PassRecorded{noSources, blocked}); !s.InferenceBlocked {
		t.Errorf("blocked and nothing ran: %+v", s)
	}
	if s := processing.Summarize(1, processing.Medium, []processing.PassRecorded{ran, blocked}); s.InferenceBlocked || s.Sources != 2 || s.Suggestions != 1 {
		t.Errorf("one ran: %+v", s)
	}
	if s := processing.Summarize(1, processing.Medium, []processing.PassRecorded{noSources}); s.InferenceBlocked {
		t.Errorf("nothing blocked: %+v", s)
	}
}
