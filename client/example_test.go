package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/engram-memory/engram/client"
)

func Example() {
	ctx := context.Background()
	c := client.New(client.DefaultBaseURL, "eng_...")

	at := time.Date(2024, 5, 8, 13, 56, 0, 0, time.UTC)
	if _, err := c.CreateMemories(ctx, client.BatchRequest{
		AgentID: "claire",
		Memories: []client.BatchMemory{
			{Type: "raw_entries", Content: client.RawEntryContent{Content: "deploy-v2.4.7-hotfix is out"}, CreatedAt: &at},
			{Type: "notes", Content: client.NoteContent{Content: "rollbacks need a ticket", NoteType: "observation"}},
		},
	}); err != nil {
		log.Fatal(err)
	}

	res, err := c.Search(ctx, client.SearchRequest{AgentID: "claire", Query: "hotfix", Mode: client.ModeHybrid, Limit: 5})
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Code == "rate_limited":
		log.Printf("slow down for %s", apiErr.RetryAfter)
	case err != nil:
		log.Fatal(err)
	default:
		for _, r := range res.Results {
			fmt.Println(r.Type, r.ID, r.Score)
		}
	}
}
