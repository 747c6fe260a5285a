package memory

import (
	"encoding/json"
	"math"
	"time"
)

// Tier is a band of memory strength.
type Tier string

// The tiers, strongest first. A memory is forgotten exactly when its
// strength is 0: decay alone never takes it there (see MinDecayedStrength).
const (
	TierStrong    Tier = "strong"    // strength ≥ 0.8
	TierFading    Tier = "fading"    // 0.5 ≤ strength < 0.8
	TierWeak      Tier = "weak"      // 0.2 ≤ strength < 0.5
	TierDormant   Tier = "dormant"   // 0 < strength < 0.2
	TierForgotten Tier = "forgotten" // strength 0
)

// Strength bounds and the amounts the strength actions move it by.
const (
	StrongStrength  = 0.8
	FadingStrength  = 0.5
	WeakStrength    = 0.2
	InitialStrength = 1.0
	// RecoveredStrength is where recover puts a forgotten memory: weak,
	// so it has to earn its way back (verify). The original system used
	// 0.2, the weak band's lower edge, from which decay makes a memory
	// dormant within seconds; 0.25 keeps it weak for 150 days.
	RecoveredStrength = 0.25
	// VerifyBoost is what verify adds (capped at 1).
	VerifyBoost = 0.1
	// DefaultWeakenBy is what weaken takes away when the request names no
	// amount.
	DefaultWeakenBy = 0.1
	// MinDecayedStrength is the floor of decay and weaken: only forget
	// makes a memory forgotten, so that forgetting is always a recorded
	// decision, never the silent effect of time.
	MinDecayedStrength = 0.01
	// DecayPerHalfLife is how much strength a memory loses per half-life
	// of its type without a strengthening event (1 % per 30 days for most
	// types, as in the original system).
	DecayPerHalfLife = 0.01
)

// TierOf is the tier of a strength.
func TierOf(strength float64) Tier {
	switch {
	case strength >= StrongStrength:
		return TierStrong
	case strength >= FadingStrength:
		return TierFading
	case strength >= WeakStrength:
		return TierWeak
	case strength > 0:
		return TierDormant
	default:
		return TierForgotten
	}
}

// Vitality is what a memory's strength is computed from: the strength
// the last strength event set, when it set it, and the facts that stop
// decay. The read model stores it; nothing writes the decayed value back.
type Vitality struct {
	Type Type
	// GoalType is the goal_type of a goal (its half-life depends on it).
	GoalType string
	// Base is the strength as last set by an event (1 at creation).
	Base float64
	// Since is the time of the event that set Base (the server clock of
	// the log, never a client-supplied created_at, so an imported old
	// memory starts strong).
	Since     time.Time
	Protected bool
	Forgotten bool
}

// DefaultProtected tells whether a new memory of the type is protected:
// values and drives are, as in the original system.
func DefaultProtected(t Type) bool { return t == Value || t == Drive }

// Decays tells whether memories of the type lose strength with time. Raw
// entries do not: they are the record that processing works from (as in
// the original system, where they have no strength at all).
func Decays(t Type) bool { return t != RawEntry }

// HalfLife is the decay period of a memory: DecayPerHalfLife of strength
// is lost per half-life. Goals that are aspirations or commitments fade
// more slowly than tasks.
func HalfLife(t Type, goalType string) time.Duration {
	const day = 24 * time.Hour
	if t == Goal {
		switch goalType {
		case "aspiration":
			return 180 * day
		case "commitment":
			return 365 * day
		}
	}
	return 30 * day
}

// Strength is the memory's strength at now: Base less the decay since
// Since, floored at MinDecayedStrength; 0 when forgotten. Protected
// memories and agents with lazy decay off (decay false) do not decay.
// It is computed on every read and never stored.
func Strength(now time.Time, v Vitality, decay bool) float64 {
	if v.Forgotten {
		return 0
	}
	s := v.Base
	if decay && !v.Protected && Decays(v.Type) && now.After(v.Since) {
		s -= float64(now.Sub(v.Since)) / float64(HalfLife(v.Type, v.GoalType)) * DecayPerHalfLife
	}
	return roundStrength(math.Min(1, math.Max(MinDecayedStrength, s)))
}

// WeakAt is the instant from which the memory is weak or dormant (its
// strength below FadingStrength) with decay on: Since when Base is already
// below, the zero time when it never gets there (protected, forgotten). A read model can store it and select "not
// weak" memories as WeakAt zero or after now, inside its query.
func WeakAt(v Vitality) time.Time {
	if v.Forgotten {
		return time.Time{}
	}
	if v.Base < FadingStrength {
		return v.Since
	}
	if v.Protected || !Decays(v.Type) {
		return time.Time{}
	}
	perNs := DecayPerHalfLife / float64(HalfLife(v.Type, v.GoalType))
	return v.Since.Add(time.Duration((v.Base - FadingStrength) / perNs))
}

// roundStrength removes floating-point noise (1 - 80×0.01 is
// 0.19999999999999996, which would put a memory at the weak edge in the
// dormant band) while keeping far more precision than any band needs.
func roundStrength(s float64) float64 { return math.Round(s*1e9) / 1e9 }

// Weakened is the strength after weakening by amount (floored at
// MinDecayedStrength).
func Weakened(current, amount float64) float64 {
	return roundStrength(math.Max(MinDecayedStrength, current-amount))
}

// Verified is the strength after a verification (capped at 1).
func Verified(current float64) float64 {
	return roundStrength(math.Min(1, current+VerifyBoost))
}

// InitialVitality is the strength basis of a memory created with canonical
// content at: the content's strength (floored at MinDecayedStrength, since
// only forget makes a memory forgotten) and is_protected, which
// NormalizeContent defaults to 1 and DefaultProtected. A patch of those
// content fields sets them again; the strength actions change the live
// strength and protection, not the content.
func InitialVitality(t Type, content json.RawMessage, at time.Time) Vitality {
	var m Metadata
	if json.Unmarshal(content, &m) != nil {
		m = Metadata{} // a failed decode may have set some fields: none count
	}
	return initialVitality(t, GoalType(t, content), m, at)
}

// initialVitality is InitialVitality from the content's goal type and
// metadata.
func initialVitality(t Type, goalType string, m Metadata, at time.Time) Vitality {
	v := Vitality{Type: t, GoalType: goalType, Base: InitialStrength, Since: at, Protected: DefaultProtected(t)}
	if m.Strength != nil {
		v.Base = math.Max(MinDecayedStrength, *m.Strength)
	}
	if m.IsProtected != nil {
		v.Protected = *m.IsProtected
	}
	return v
}

// GoalType is the goal_type of a goal's canonical content ("" for other
// types, or when absent), which sets the goal's half-life.
func GoalType(t Type, content json.RawMessage) string {
	if t != Goal {
		return ""
	}
	var c struct {
		GoalType string `json:"goal_type"`
	}
	if json.Unmarshal(content, &c) != nil {
		return ""
	}
	return c.GoalType
}
