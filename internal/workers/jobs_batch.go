package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
)

// embedBatch embeds one batch of the job's memories with its model and
// records the vectors in the agent stream, in one append where the event
// store takes it (in parts, in order, where it does not): the work and the
// progress it makes are the same writes. Every memory of the batch ends up
// embedded or skipped, so the cursor passes them all.
func (r *JobRunner) embedBatch(ctx context.Context, j *job.Job, items []memory.View) error {
	texts := make([]string, len(items))
	for i, m := range items {
		text, err := memory.IndexedText(m.Type, m.Content)
		if err != nil {
			return err
		}
		texts[i] = text
	}
	start := time.Now()
	vectors, err := r.embed(ctx, j, texts)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping, not failing
		}
		if refused(err) {
			return r.embedEach(ctx, j, items, texts)
		}
		return r.batchFailed(ctx, j, err)
	}
	r.clearRetries(j.ID)
	if err := r.record(ctx, j, items, texts, vectors); err != nil {
		return err
	}
	// The pace of the whole batch, recording included, is what estimates
	// of later jobs need.
	r.observeRate(j.Model, len(texts), time.Since(start))
	return nil
}

// embed asks the provider for exactly the job's model and size (embedTexts
// checks the answer before anything is recorded).
func (r *JobRunner) embed(ctx context.Context, j *job.Job, texts []string) ([][]float32, error) {
	return domain.EmbedExactly(ctx, r.catalog, r.cfg.EmbedTimeout, j.Model, j.Dimensions, texts)
}

// refused tells a provider's refusal of some input (worth retrying text by
// text) from an outage or a model that is gone (worth retrying later, then
// failing).
func refused(err error) bool {
	e, ok := domain.AsError(err)
	return ok && e.Kind == domain.KindInvalid && e.PublicCode() != "model_not_available"
}

// embedEach embeds a refused batch text by text: the texts the provider
// takes are recorded, the others are skipped and listed as job errors.
func (r *JobRunner) embedEach(ctx context.Context, j *job.Job, items []memory.View, texts []string) error {
	type skip struct{ id, msg string }
	var okItems []memory.View
	var okTexts []string
	var okVectors [][]float32
	var skips []skip
	for i, text := range texts {
		// Each call waits for the ones before it: a memory purged,
		// forgotten or given a new text meanwhile is not sent (its
		// vector would be dropped anyway).
		if current, err := r.stillCurrent(ctx, j, items[i], text); err != nil || !current {
			if err != nil {
				return err
			}
			continue
		}
		v, err := r.embed(ctx, j, []string{text})
		switch {
		case err == nil:
			okItems, okTexts, okVectors = append(okItems, items[i]), append(okTexts, text), append(okVectors, v[0])
		case ctx.Err() != nil:
			return ctx.Err()
		case refused(err):
			skips = append(skips, skip{items[i].ID, publicMessage(err)})
		default:
			return r.batchFailed(ctx, j, err)
		}
	}
	r.clearRetries(j.ID)
	if len(okItems) > 0 {
		if err := r.record(ctx, j, okItems, okTexts, okVectors); err != nil {
			return err
		}
	}
	for _, s := range skips {
		cur, err := job.Read(ctx, r.writer.Store(), j.ID)
		if err != nil || !r.holds(cur) {
			return err
		}
		if err := r.appendJob(ctx, cur, func() (domain.Payload, error) { return cur.Skip(s.id, s.msg, r.cfg.Now()) }); err != nil {
			return err
		}
	}
	return nil
}

// stillCurrent reports whether the job's memory m still has text: it is
// neither purged nor forgotten, and its text has not changed since the
// batch was read.
func (r *JobRunner) stillCurrent(ctx context.Context, j *job.Job, m memory.View, text string) (bool, error) {
	now, err := r.memories.MemoriesByID(ctx, j.UserID, j.AgentID, []string{m.ID})
	if err != nil {
		return false, err
	}
	v, ok := now[m.ID]
	return ok && v.TextHash == memory.TextHash(text), nil
}

// record appends the batch's vectors, unless the job was cancelled or
// taken over while the batch was being embedded.
func (r *JobRunner) record(ctx context.Context, j *job.Job, items []memory.View, texts []string, vectors [][]float32) error {
	cur, err := job.Read(ctx, r.writer.Store(), j.ID)
	if err != nil {
		return err
	}
	if !r.holds(cur) {
		return nil
	}
	events := make([]domain.Payload, len(items))
	for i, m := range items {
		events[i] = memory.MemoryEmbedded{
			AgentRef: j.AgentRef(), MemoryID: m.ID, Model: j.Model, Dimensions: j.Dimensions,
			TextHash: memory.TextHash(texts[i]), Vector: vectors[i], JobID: j.ID,
		}
	}
	if err := appendInParts(ctx, r.writer, memory.AgentStream(j.UserID, j.AgentID), r.meta(j), events); err != nil {
		return err
	}
	if r.cfg.AfterBatch != nil {
		r.cfg.AfterBatch(j.ID, len(items))
	}
	return nil
}

// batchFailed records a failed attempt and backs off; after MaxAttempts in
// a row the job fails.
func (r *JobRunner) batchFailed(ctx context.Context, j *job.Job, cause error) error {
	msg := publicMessage(cause)
	r.mu.Lock()
	st := r.retries[j.ID]
	st.attempts++
	backoff := r.cfg.RetryBackoff << min(st.attempts-1, 20)
	st.notBefore = r.cfg.Now().Add(min(backoff, r.cfg.MaxBackoff))
	r.retries[j.ID] = st
	r.mu.Unlock()
	r.cfg.Logger.WarnContext(ctx, "re-embedding batch failed", "job", j.ID, "attempt", st.attempts, "error", cause)
	if st.attempts >= r.cfg.MaxAttempts {
		return r.fail(ctx, j, fmt.Sprintf("gave up after %d failed attempts in a row; last error: %s", st.attempts, msg))
	}
	return r.appendJob(ctx, j, func() (domain.Payload, error) { return j.RecordBatchFailure(st.attempts, msg, r.cfg.Now()) })
}

// publicMessage is what a job's errors may show its user: our errors'
// messages, never the internals of others.
func publicMessage(err error) string {
	if e, ok := domain.AsError(err); ok && e.Kind != domain.KindInternal {
		return e.Message
	}
	return "internal error (details in the server log)"
}
