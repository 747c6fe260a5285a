package agentsettings_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/agentsettings"
)

func TestApplyPatch(t *testing.T) {
	d := agentsettings.Defaults()
	for _, tc := range []struct {
		name    string
		patch   string
		wantErr string // field named by the error; "" for success
		check   func(agentsettings.Settings) bool
	}{
		{"state", `{"stack_state":"maintenance"}`, "", func(s agentsettings.Settings) bool { return s.StackState == agentsettings.Maintenance }},
		{"nested merge keeps other fields", `{"lint_rules":{"min_length":3}}`, "", func(s agentsettings.Settings) bool {
			return s.LintRules.MinLength == 3 && s.LintRules.MaxLength == d.LintRules.MaxLength && s.LintRules.Enabled
		}},
		{"booleans", `{"enforce_provenance":false,"lazy_decay":false}`, "", func(s agentsettings.Settings) bool { return !s.EnforceProvenance && !s.LazyDecay }},
		{"gates", `{"promotion_gates":{"belief_min_confidence":0.9}}`, "", func(s agentsettings.Settings) bool {
			return s.PromotionGates.BeliefMinConfidence == 0.9 && s.PromotionGates.BeliefMinEvidence == 3
		}},
		{"an integer written 5.0 keeps the other fields", `{"lint_rules":{"min_length":5.0}}`, "", func(s agentsettings.Settings) bool {
			return s.LintRules.MinLength == 5 && s.LintRules.MaxLength == d.LintRules.MaxLength && s.LintRules.Enabled
		}},
		{"unknown state", `{"stack_state":"frozen"}`, "stack_state", nil},
		{"unknown setting", `{"stack_sate":"active"}`, "stack_sate", nil},
		{"unknown nested field", `{"lint_rules":{"min_len":3}}`, "lint_rules", nil},
		{"null leaves the setting as it is", `{"lazy_decay":null,"stack_state":"maintenance"}`, "", func(s agentsettings.Settings) bool {
			return s.LazyDecay == d.LazyDecay && s.StackState == agentsettings.Maintenance
		}},
		{"wrong type", `{"lazy_decay":"yes"}`, "lazy_decay", nil},
		{"min above max", `{"lint_rules":{"min_length":50,"max_length":20}}`, "lint_rules", nil},
		{"confidence above 1", `{"promotion_gates":{"belief_min_confidence":1.5}}`, "promotion_gates.belief_min_confidence", nil},
		{"negative evidence", `{"promotion_gates":{"value_min_evidence":-1}}`, "promotion_gates", nil},
		{"empty object", `{}`, "", nil},
		{"not an object", `[1]`, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Apply(json.RawMessage(tc.patch))
			if tc.check != nil {
				if err != nil || !tc.check(got) {
					t.Fatalf("Apply(%s) = %+v, %v", tc.patch, got, err)
				}
				return
			}
			de, ok := domain.AsError(err)
			if !ok || de.Kind != domain.KindInvalid {
				t.Fatalf("Apply(%s) error = %v, want invalid_request", tc.patch, err)
			}
			if field, _ := de.Details["field"].(string); field != tc.wantErr {
				t.Fatalf("error names field %q, want %q (%v)", field, tc.wantErr, err)
			}
		})
	}
}

func TestChangedAndGuards(t *testing.T) {
	d := agentsettings.Defaults()
	s, err := d.Apply(json.RawMessage(`{"stack_state":"active","lint_rules":{"enabled":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Changed(s); !slices.Equal(got, []string{"stack_state", "lint_rules"}) {
		t.Fatalf("Changed = %v", got)
	}
	if !s.EnforcesProvenance() || d.EnforcesProvenance() {
		t.Fatal("provenance is enforced exactly when active with enforce_provenance on")
	}
	m, _ := d.Apply(json.RawMessage(`{"stack_state":"maintenance"}`))
	de, ok := domain.AsError(m.CheckMemoryWrite("a"))
	if !ok || de.Kind != domain.KindConflict || de.PublicCode() != "stack_in_maintenance" {
		t.Fatalf("maintenance write check = %v", de)
	}
	if s.CheckMemoryWrite("a") != nil || d.CheckMemoryWrite("a") != nil {
		t.Fatal("active and initializing stacks accept writes")
	}
}

// TestASettingsEventLeavingSettingsOutReadsAsTheDefaults: a settings
// event that leaves a setting out, or sends it as null, reads as the
// default, down to each field of lint_rules and promotion_gates, whether
// it is read from a log (the server's and a local stack's fold, a replay)
// or strictly, as a push or an import reads it; an integral number a
// push writes 4.0 does not reset the rest to zero values.
func TestASettingsEventLeavingSettingsOutReadsAsTheDefaults(t *testing.T) {
	r := domain.MustEventRegistry(agentsettings.Events())
	d := agentsettings.Defaults()
	for _, tc := range []struct {
		name       string
		payload    string
		want       func(*agentsettings.Settings)
		pushedOnly bool // only a push may write an integer 4.0; the log holds what Go wrote
	}{
		{"only the state, as an older engram wrote it", `{"settings":{"stack_state":"active"}}`, func(s *agentsettings.Settings) { s.StackState = agentsettings.Active }, false},
		{"no settings at all", `{"settings":{}}`, func(*agentsettings.Settings) {}, false},
		{"nulls", `{"settings":{"stack_state":null,"enforce_provenance":null,"lazy_decay":null,"lint_rules":null,"promotion_gates":null}}`, func(*agentsettings.Settings) {}, false},
		{"part of lint_rules", `{"settings":{"stack_state":"active","lint_rules":{"enabled":true,"min_length":5,"max_length":100}}}`, func(s *agentsettings.Settings) {
			s.StackState, s.LintRules.MinLength, s.LintRules.MaxLength = agentsettings.Active, 5, 100
		}, false},
		{"part of promotion_gates, an integer written 4.0", `{"settings":{"promotion_gates":{"belief_min_evidence":4.0}}}`, func(s *agentsettings.Settings) { s.PromotionGates.BeliefMinEvidence = 4 }, true},
		{"a setting turned off stays off", `{"settings":{"lazy_decay":false,"lint_rules":{"check_fragments":false}}}`, func(s *agentsettings.Settings) {
			s.LazyDecay, s.LintRules.CheckFragments = false, false
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := d
			tc.want(&want)
			e := domain.Event{Type: "StackSettingsChanged", Payload: json.RawMessage(tc.payload)}
			pushed, err := r.DecodeStrict(e)
			if err != nil {
				t.Fatal(err)
			}
			read := map[string]domain.Payload{"strictly": pushed}
			if !tc.pushedOnly {
				if read["from the log"], err = r.Decode(e).Decoded(); err != nil {
					t.Fatal(err)
				}
			}
			for how, p := range read {
				if got := p.(*agentsettings.SettingsChanged).Settings; got != want {
					t.Errorf("read %s: %+v, want %+v", how, got, want)
				}
			}
		})
	}
}
