// Package llm is the language-model processor of the processing pipeline:
// it asks an OpenAI-compatible chat endpoint (through go-openai, with the
// same base URL and key settings as the embeddings) to turn a batch of
// sources into memories, under a strict JSON contract. Whatever the model
// answers, the result is items or recorded errors, never a crash.
package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// Options configure the chat processor.
type Options struct {
	BaseURL      string // empty: OpenAI's
	APIKey       string
	Organization string
	Model        string // required, e.g. "gpt-4o-mini"
	// Timeout bounds one chat request; 0 means DefaultTimeout.
	Timeout    time.Duration
	HTTPClient *http.Client
}

// DefaultTimeout bounds a chat request when Options.Timeout is 0.
const DefaultTimeout = 60 * time.Second

// Limits of what a prompt carries.
const (
	// SourceChars is how much of each source's text the prompt shows.
	SourceChars = 500
	// ContextMemories is how many existing memories the prompt shows.
	ContextMemories = 10
)

// ErrUnavailable wraps failures to get an answer (transport, status,
// timeout): the pass records it and leaves its sources unprocessed.
var ErrUnavailable = errors.New("chat model unavailable")

// Chat is the processor backed by a chat model.
type Chat struct {
	client  *goopenai.Client
	model   string
	timeout time.Duration
}

// New returns a chat processor.
func New(o Options) (*Chat, error) {
	if o.Model == "" {
		return nil, errors.New("llm: a chat model is required")
	}
	cfg := goopenai.DefaultConfig(o.APIKey)
	if o.BaseURL != "" {
		cfg.BaseURL = strings.TrimRight(o.BaseURL, "/")
	}
	cfg.OrgID = o.Organization
	if o.HTTPClient != nil {
		cfg.HTTPClient = o.HTTPClient
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Chat{client: goopenai.NewClientWithConfig(cfg), model: o.Model, timeout: timeout}, nil
}

// Info describes the processor.
func (c *Chat) Info() processing.ProcessorInfo {
	return processing.ProcessorInfo{Model: c.model, Inference: true}
}

// Propose asks the model for t's items from batch, showing known as
// context. It returns the valid items and, per broken item or for an
// answer that breaks the contract as a whole, errors wrapping
// processing.ErrMalformedOutput; err (wrapping ErrUnavailable) is set
// when no answer came.
func (c *Chat) Propose(ctx context.Context, t processing.Transition, batch, known []processing.Source) ([]processing.Item, []error, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.client.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{
		Model:       c.model,
		Temperature: 0,
		Messages: []goopenai.ChatCompletionMessage{
			{Role: goopenai.ChatMessageRoleSystem, Content: SystemPrompt(t)},
			{Role: goopenai.ChatMessageRoleUser, Content: UserPrompt(t, batch, known)},
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, c.model, err)
	}
	if len(resp.Choices) == 0 {
		return nil, []error{fmt.Errorf("%w: the answer has no choices", processing.ErrMalformedOutput)}, nil
	}
	items, errs := processing.ParseModelOutput(t, resp.Choices[0].Message.Content, batch)
	return items, errs, nil
}

// schemas describe each target type's content to the model; they are the
// memory content fields of the API.
var schemas = map[memory.Type]string{
	memory.Episode:      `{"objective": string (required), "outcome": string (required), "outcome_type": "success"|"failure"|"partial"|"neutral"|"mixed"|"unknown", "lessons": [string]}`,
	memory.Note:         `{"content": string (required), "note_type": "observation"|"reference"|"procedure"|"fact"|"insight"|"decision"}`,
	memory.Belief:       `{"statement": string (required), "belief_type": "causal"|"evaluative"|"procedural"|"factual", "confidence": number 0.5-0.9}`,
	memory.Goal:         `{"title": string (required), "description": string, "goal_type": "task"|"aspiration"|"commitment"|"exploration", "priority": "low"|"medium"|"high"|"critical"}`,
	memory.Relationship: `{"entity_name": string (required), "entity_type": "person"|"org"|"system"|"other", "relationship_type": string (required), "notes": string, "sentiment": number -1..1}`,
	memory.Value:        `{"name": string (required), "statement": string (required), "priority": integer 1-100}`,
	memory.Drive:        `{"drive_type": string (required), "intensity": number 0.1-1.0, "focus_areas": [string]}`,
}

// SystemPrompt states the task and the answer contract for t.
func SystemPrompt(t processing.Transition) string {
	return fmt.Sprintf(`You turn an agent's %ss into %ss for its long-term memory.
Answer with a JSON array and nothing else. Each element is an object with exactly these keys:
  "content": %s
  "confidence": number between 0 and 1
  "source_ids": the ids (in square brackets below) of the sources this item is derived from, at least one
Propose only what the sources support. Answer [] when nothing qualifies.`, t.Source(), t.Target(), schemas[t.Target()])
}

// UserPrompt lists the batch, each source as "[id] text" (text cut to
// SourceChars), and up to ContextMemories existing memories.
func UserPrompt(t processing.Transition, batch, known []processing.Source) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Sources (%s):\n", t.Source())
	for _, s := range batch {
		fmt.Fprintf(&b, "[%s] %s\n", s.ID, cut(s.Text, SourceChars))
	}
	if len(known) > ContextMemories {
		known = known[:ContextMemories]
	}
	if len(known) > 0 {
		b.WriteString("\nExisting memories (do not repeat them):\n")
		for _, s := range known {
			fmt.Fprintf(&b, "- %s: %s\n", s.Type, cut(s.Text, SourceChars))
		}
	}
	return b.String()
}

func cut(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n])
}
