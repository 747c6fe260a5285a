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
