package main

import (
	"context"
	"fmt"

	"github.com/engram-memory/engram/client"
)

// contentOf turns a benchmark record into the content object of its type.
func contentOf(r corpusRecord) (any, error) {
	switch r.Type {
	case "raw_entries":
		return client.RawEntryContent{Content: r.Text}, nil
	case "notes":
		return client.NoteContent{Content: r.Text, NoteType: "observation"}, nil
	}
	return nil, fmt.Errorf("record %s: unsupported type %q", r.ID, r.Type)
}

// ingestAgent stores one agent's records through POST /memories/batch,
// in order, and adds service id → benchmark id to idmap. The benchmark id
// goes nowhere near the service (shared/bench/README, step 1).
func ingestAgent(ctx context.Context, c *client.Client, agentID string, recs []corpusRecord, batchSize int, idmap map[string]string) error {
	if batchSize <= 0 || batchSize > client.MaxBatch {
		batchSize = client.MaxBatch
	}
	for start := 0; start < len(recs); start += batchSize {
		chunk := recs[start:min(start+batchSize, len(recs))]
		items := make([]client.BatchMemory, len(chunk))
		for i, r := range chunk {
			content, err := contentOf(r)
			if err != nil {
				return err
			}
			created := r.CreatedAt
			items[i] = client.BatchMemory{Type: r.Type, Content: content, Tags: r.Tags, CreatedAt: &created}
		}
		var out []client.CreatedMemory
		err := retry429(ctx, func() (err error) {
			out, err = c.CreateMemories(ctx, client.BatchRequest{AgentID: agentID, Memories: items})
			return err
		})
		if err != nil {
			return fmt.Errorf("ingest %s records %d-%d: %w", agentID, start, start+len(chunk)-1, err)
		}
		if len(out) != len(chunk) {
			return fmt.Errorf("ingest %s: batch of %d returned %d memories", agentID, len(chunk), len(out))
		}
		for i, m := range out {
			if _, dup := idmap[m.ID]; dup || m.ID == "" {
				return fmt.Errorf("ingest %s: service id %q empty or returned twice", agentID, m.ID)
			}
			idmap[m.ID] = chunk[i].ID
		}
	}
	return nil
}

// ensureEmpty refuses agents that already hold memories: their old
// memories would come back from search with ids the run cannot map, and
// skew the numbers. Only a --server target can have them.
func ensureEmpty(ctx context.Context, c *client.Client, agents []string) error {
	for _, a := range agents {
		page, err := c.ListMemories(ctx, client.ListMemoriesOptions{AgentID: a, Limit: 1, IncludeForgotten: true})
		if err != nil {
			return fmt.Errorf("check agent %s is empty: %w", a, err)
		}
		if len(page.Memories) > 0 {
			return fmt.Errorf("agent %s already has memories; use a fresh account or delete it first (DELETE /v1/agents/%s)", a, a)
		}
	}
	return nil
}
