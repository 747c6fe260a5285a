package commands

import (
	"context"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/processing"
)

// The ports the commands consume, owned here in the terms the write side
// decides by: one per read model it reads (MemoryReadModel, in
// memories.go, AccountReadModel, JobReadModel, SuggestionReadModel; sync's
// log lookups are in sync.go) and one per collaborator. The read models of
// infra/sqlite and infra/postgres implement them. Every lookup is scoped
// by user: a missing or foreign row is (zero, false, nil).

// AccountReadModel is the accounts read model: which user stream to load,
// and what authenticates.
type AccountReadModel interface {
	UserByID(ctx context.Context, userID string) (account.UserView, bool, error)
	UserByVerificationToken(ctx context.Context, tokenHash string) (account.UserView, bool, error)
	KeyByHash(ctx context.Context, hash string) (account.KeyView, bool, error)
	KeysByUser(ctx context.Context, userID string) ([]account.KeyView, error)
	SessionByHash(ctx context.Context, hash string) (account.SessionView, bool, error)
}

// AgentLister lists the agent ids of a user, for the account status;
// the memories read model implements it.
type AgentLister interface {
	AgentIDs(ctx context.Context, userID string) ([]string, error)
}

// JobReadModel is the jobs read model.
type JobReadModel interface {
	Job(ctx context.Context, userID, jobID string) (job.View, bool, error)
	ActiveJobForAgent(ctx context.Context, userID, agentID string) (job.View, bool, error)
}

// SuggestionReadModel is the suggestions read model as the pipeline
// decides on it.
type SuggestionReadModel interface {
	Suggestion(ctx context.Context, userID, id string) (processing.Suggestion, bool, error)
	CountPending(ctx context.Context, userID, agentID string, now time.Time) (int, error)
}

// ModelCatalog is the server's set of embedding models (infra/embed.Catalog
// implements it). Embed resolves "default" and "", enforces the text and
// batch limits, and answers a model no configured provider serves with a
// KindInvalid error coded "model_not_available" listing the available ones.
type ModelCatalog interface {
	domain.Embedder
	// Resolve looks up a served model ("default" and "" give the default),
	// failing with 400 model_not_available.
	Resolve(name string) (domain.EmbeddingModel, error)
}

// Processor turns a batch of sources into proposed memories: the rule
// extractor (processing.RuleExtractor) or a chat model (infra/llm).
// itemErrs are items that broke the contract; err means no answer came.
type Processor interface {
	Info() processing.ProcessorInfo
	Propose(ctx context.Context, t processing.Transition, batch, known []processing.Source) (items []processing.Item, itemErrs []error, err error)
}

// MemoryCreator creates memories; Memories implements it, so promoted
// suggestions and auto-promoted items go through the same checks as any
// write.
type MemoryCreator interface {
	Create(ctx context.Context, meta domain.Metadata, agentID string, in MemoryInput) (CreatedMemory, error)
	// CreateWith stores memories and another stream's events in one
	// append, or nothing (Memories.CreateWith).
	CreateWith(ctx context.Context, meta domain.Metadata, agentID string, in []MemoryInput, with func(made []MadeMemory) (StreamPart, error)) error
}

// JobRunner runs the bulk re-embedding jobs (workers.JobRunner implements
// it): Kick wakes it for a job just queued, Rate is the embedding rate it
// has measured for a model, in memories per second.
type JobRunner interface {
	Kicker
	Rate(model string) (float64, bool)
}

// KeyUsage keeps when each API key was last used, for last_used_at
// (workers.UsageRecorder implements it, recording the uses in batches).
type KeyUsage interface {
	Record(userID, keyID string, at time.Time)
	LastUse(keyID string) (time.Time, bool)
}

// Mail is one plain-text message. Its fields match infra/mail.Message, so
// a mail.Message conversion adapts a mail sender (see MailerFunc).
type Mail struct {
	To      string
	Subject string
	Text    string
}

// Mailer delivers mail.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}

// MailerFunc adapts a function to Mailer, e.g.
//
//	commands.MailerFunc(func(ctx context.Context, m commands.Mail) error {
//		return sender.Send(ctx, mail.Message(m))
//	})
type MailerFunc func(ctx context.Context, m Mail) error

// Send implements Mailer.
func (f MailerFunc) Send(ctx context.Context, m Mail) error { return f(ctx, m) }
