package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/internal/app"
)

// reembedPoll is how often --wait reads the job.
const reembedPoll = 500 * time.Millisecond

// jobState is what the CLI shows of a re-embedding job, from either side.
type jobState struct {
	ID        string `json:"job_id"`
	Status    string `json:"status"`
	AgentID   string `json:"agent_id"`
	Model     string `json:"model"`
	Processed int    `json:"memories_processed"`
	Total     int    `json:"memories_total"`
	Reason    string `json:"failure_reason,omitempty"`
}

func localJobState(v job.View) jobState {
	total := v.MemoriesTotal
	if total == 0 {
		total = v.EstimatedMemories
	}
	return jobState{ID: v.JobID, Status: string(v.Status), AgentID: v.AgentID, Model: v.Model, Processed: v.MemoriesProcessed, Total: total, Reason: v.Reason}
}

func cloudJobState(j *client.Job) jobState {
	total := j.MemoriesTotal
	if total == 0 {
		total = j.EstimatedMemories
	}
	return jobState{ID: j.JobID, Status: j.Status, AgentID: j.AgentID, Model: j.Model, Processed: j.MemoriesProcessed, Total: total, Reason: j.FailureReason}
}

func reembedCommand(ctx context.Context, c *cli, args []string) error {
	flags := c.flags("reembed", "[--model M] [--type T]… [--wait] [--local|--cloud]",
		"Start a bulk re-embedding job: the stack's memories (of the given types, default every searchable one) are embedded again with the model (default the server's default), then search switches to it. The cloud agent of the stack's id when the cloud is configured, unless --local. With --wait the command follows the job to its end, with a progress bar on stderr when it is a terminal, and fails (exit 1) when the job fails or is cancelled; without it, it prints the queued job and returns. A local job runs in this command's own process, so on the local stack the command always waits.")
	model := flags.String("model", "", "the model to re-embed with (default: the server's default model)")
	var types stringList
	flags.Var(&types, "type", "only memories of this type, plural or singular name (repeat for more)")
	wait := flags.Bool("wait", false, "follow the job to its end with a progress bar; exit 1 if it fails or is cancelled (always on for the local stack)")
	localOnly := flags.Bool("local", false, "re-embed the local stack even when the cloud is configured")
	cloudOnly := flags.Bool("cloud", false, "re-embed the cloud agent of the stack's id")
	if _, err := c.parse(flags, args, 0, 0); err != nil {
		return err
	}
	cl, err := c.transferCloud("reembed", *localOnly, *cloudOnly)
	if err != nil {
		return err
	}
	var start func(context.Context) (jobState, error)
	var read func(context.Context, string) (jobState, error)
	if cl != nil {
		api := cl.client(0)
		start = func(ctx context.Context) (jobState, error) {
			created, err := api.BulkReembed(ctx, client.BulkReembedRequest{AgentID: c.stackName(), Types: splitCommas(types), Model: *model})
			if err != nil {
				return jobState{}, err
			}
			return jobState{ID: created.JobID, Status: created.Status, AgentID: created.AgentID, Model: created.Model, Total: created.EstimatedMemories}, nil
		}
		read = func(ctx context.Context, id string) (jobState, error) {
			j, err := api.GetJob(ctx, id)
			if err != nil {
				return jobState{}, err
			}
			return cloudJobState(j), nil
		}
	} else {
		// The job runner runs in this process (Workers): a local job
		// left behind would hold its agent until its lease ran out, so
		// the command waits for it.
		*wait = true
		st, err := c.openStack(ctx, false, writeParts|app.Workers)
		if err != nil {
			return err
		}
		defer st.close()
		start = func(ctx context.Context) (jobState, error) {
			created, err := st.app.Embeddings.BulkReembed(ctx, st.meta(), commands.BulkReembedRequest{AgentID: st.name, Types: splitCommas(types), Model: *model})
			if err != nil {
				return jobState{}, err
			}
			return localJobState(created.View), nil
		}
		read = func(ctx context.Context, id string) (jobState, error) {
			v, err := st.app.Queries.Job(ctx, localUserID, id)
			if err != nil {
				return jobState{}, err
			}
			return localJobState(v), nil
		}
	}
	j, err := start(ctx)
	if err == nil && *wait {
		j, err = c.waitJob(ctx, j, read)
	}
	if cloudUnreachable(err) {
		return fmt.Errorf("%w: %v", errCloudUnreachable, err)
	}
	if j.ID == "" {
		return err
	}
	if c.json {
		if perr := c.printJSON(j); perr != nil {
			return perr
		}
	} else {
		fmt.Fprintf(c.stdout, "re-embedding job %s: %s, %d/%d memories with %s\n", j.ID, j.Status, j.Processed, j.Total, j.Model)
	}
	return err
}

// waitJob reads the job every reembedPoll until it ends, drawing its
// progress; a job that fails or is cancelled is an error.
func (c *cli) waitJob(ctx context.Context, j jobState, read func(context.Context, string) (jobState, error)) (jobState, error) {
	bar := c.progress("re-embedded", j.Total).withUnit("memories")
	defer bar.finish()
	for !job.Status(j.Status).Terminal() {
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-time.After(reembedPoll):
		}
		next, err := read(ctx, j.ID)
		if err != nil {
			return j, err
		}
		j = next
		bar.setTotal(j.Total)
		bar.update(j.Processed)
	}
	switch job.Status(j.Status) {
	case job.StatusFailed:
		return j, fmt.Errorf("re-embedding job %s failed: %s", j.ID, j.Reason)
	case job.StatusCancelled:
		return j, errors.New("re-embedding job " + j.ID + " was cancelled")
	}
	return j, nil
}
