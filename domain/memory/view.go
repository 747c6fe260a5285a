package memory

import (
	"encoding/json"
	"strconv"
	"time"
)

// View is a memory as read models return it.
type View struct {
	ID          string          `json:"id"`
	AgentID     string          `json:"agent_id"`
	Type        Type            `json:"type"`
	Content     json.RawMessage `json:"content"`
	Tags        []string        `json:"tags"`
	DerivedFrom []string        `json:"derived_from"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Forgotten   bool            `json:"forgotten"`
	ForgottenAt *time.Time      `json:"forgotten_at"`
	// Strength and Tier are computed from Vitality when the memory is
	// read (ApplyStrength); no read ever stores them.
	Strength          float64    `json:"strength"`
	Tier              Tier       `json:"tier"`
	Protected         bool       `json:"is_protected"`
	VerificationCount int        `json:"verification_count"`
	LastVerifiedAt    *time.Time `json:"last_verified_at"`
	Vitality          Vitality   `json:"-"`
	// LazyDecay is the agent's lazy_decay setting, which ApplyStrength uses.
	LazyDecay bool   `json:"-"`
	TextHash  string `json:"-"`
	// Version counts the changes of the memory's content, tags and
	// forgotten state, from 1 at creation; a new vector does not change it.
	// It is the memory's ETag.
	Version int64 `json:"version"`
	// Embedding tells whether the current text has a vector in the agent's
	// active model ("embedded") or waits for one ("pending").
	Embedding EmbeddingState `json:"embedding"`
	// Processed is a raw entry's one processed state: a processing pass
	// consumed it, or its content says processed: true (the client
	// processed it). The raw entry views and the stats show it; the memory
	// representation does not.
	Processed bool `json:"-"`
}

// ApplyStrength sets Strength and Tier as they are at now.
func (v *View) ApplyStrength(now time.Time) {
	v.Strength = Strength(now, v.Vitality, v.LazyDecay)
	v.Tier = TierOf(v.Strength)
}

// ETag is the memory's entity tag: its version, quoted (a strong tag of
// RFC 9110, which If-Match compares).
func (v View) ETag() string { return `"` + strconv.FormatInt(v.Version, 10) + `"` }

// EmbeddingState is a memory's embedding status in its agent's model.
type EmbeddingState struct {
	Status     string `json:"status"` // "embedded", "pending", or "not_indexed" (drives)
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
}

// AgentView is an agent as read models return it.
type AgentView struct {
	UserID         string    `json:"-"`
	AgentID        string    `json:"agent_id"`
	EmbeddingModel string    `json:"embedding_model"`
	Dimensions     int       `json:"dimensions"`
	CreatedAt      time.Time `json:"created_at"`
	MemoryCount    int       `json:"memory_count"`
	// StoredMemories counts every memory the agent keeps, forgotten ones
	// included (what the memories-per-agent quota counts), and TextBytes
	// their content's size (what the text-bytes quota sums).
	StoredMemories int   `json:"stored_memories"`
	TextBytes      int64 `json:"text_bytes"`
}

// Scored is a memory found by similarity, with its score in [0, 1].
type Scored struct {
	Type    Type
	ID      string
	Score   float64
	Content json.RawMessage
}

// Excerpt is what a search result shows of a memory: the read model
// answers searches with it rather than with a whole View, which costs
// several more columns, a join and two JSON lists per memory.
type Excerpt struct {
	ID        string
	AgentID   string
	Type      Type
	Content   json.RawMessage
	Tags      []string
	CreatedAt time.Time
	// Vitality and LazyDecay give the strength at read time (StrengthAt);
	// Vitality.Forgotten tells a forgotten memory.
	Vitality  Vitality
	LazyDecay bool
}

// StrengthAt is the memory's strength at now (0 when forgotten).
func (e Excerpt) StrengthAt(now time.Time) float64 { return Strength(now, e.Vitality, e.LazyDecay) }
