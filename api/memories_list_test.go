package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain/memory"
)

func TestMemGetAndListPagination(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "pages@example.com")
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var items []any
	for i := range 40 {
		// Pairs share a created_at, so ties are broken by id.
		items = append(items, map[string]any{"type": "note", "content": map[string]any{"content": fmt.Sprint("n", i)},
			"created_at": base.Add(time.Duration(i/2) * time.Minute).Format(time.RFC3339)})
	}
	s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "p", "memories": items}).must(t, http.StatusCreated, nil)
	s.create(t, key, "p", "belief", map[string]any{"statement": "not a note"})
	s.create(t, key, "elsewhere", "note", map[string]any{"content": "other agent"})

	all := s.listAll(t, key, "agent_id=p&type=notes", 7)
	if len(all) != 40 {
		t.Fatalf("listed %d notes, want 40", len(all))
	}
	seen := map[string]bool{}
	for i, v := range all {
		if seen[v.ID] {
			t.Fatalf("duplicate %s", v.ID)
		}
		seen[v.ID] = true
		if v.Type != memory.Note || v.AgentID != "p" {
			t.Errorf("filter leak: %+v", v)
		}
		if i > 0 {
			prev := all[i-1]
			if prev.CreatedAt.Before(v.CreatedAt) || (prev.CreatedAt.Equal(v.CreatedAt) && prev.ID < v.ID) {
				t.Errorf("not newest first at %d", i)
			}
		}
	}
	if got := s.listAll(t, key, "agent_id=p", 1000); len(got) != 41 {
		t.Errorf("agent listing has %d, want 41", len(got))
	}
	if got := s.listAll(t, key, "", 50); len(got) != 42 {
		t.Errorf("user listing has %d, want 42", len(got))
	}
	if got := s.listAll(t, key, "type=belief,note&agent_id=p", 1000); len(got) != 41 {
		t.Errorf("two-type listing has %d, want 41", len(got))
	}
	var page memList
	s.request(t, "GET", "/v1/memories?agent_id=p", key, nil).must(t, http.StatusOK, &page)
	if len(page.Memories) != memory.DefaultListLimit-9 || page.NextCursor != nil {
		t.Errorf("default page: %d memories, next %v", len(page.Memories), page.NextCursor)
	}
	for _, q := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=x", "limit"}, {"cursor=garbage!", "cursor"},
		{"type=diaries", "type"}, {"agent_id=bad%20id", "agent_id"}, {"include_forgotten=maybe", "include_forgotten"},
	} {
		s.request(t, "GET", "/v1/memories?"+q.query, key, nil).invalid(t, q.field)
	}
	s.request(t, "GET", "/v1/memories/"+uuid.Must(uuid.NewV7()).String(), key, nil).must(t, http.StatusNotFound, nil)
	s.request(t, "GET", "/v1/memories/not-a-uuid", key, nil).must(t, http.StatusNotFound, nil)
}

func TestMemPaginationUnderConcurrentInserts(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "concurrent@example.com")
	var items []any
	for i := range 60 {
		items = append(items, map[string]any{"type": "note", "content": map[string]any{"content": fmt.Sprint("old ", i)},
			"created_at": time.Now().Add(-time.Duration(i) * time.Second).UTC().Format(time.RFC3339Nano)})
	}
	var res struct{ Memories []memCreated }
	s.request(t, "POST", "/v1/memories/batch", key, map[string]any{"agent_id": "c", "memories": items}).must(t, http.StatusCreated, &res)

	// A writer inserts concurrently; the lister waits for at least one
	// insert between pages so every page boundary sees new rows, both
	// newer than the cursor and back-dated behind it.
	inserted := make(chan struct{}, 1) // signalled after every insert
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			at := time.Now().Add(-time.Duration(n%3*40) * time.Second).UTC().Format(time.RFC3339Nano)
			r := s.request(t, "POST", "/v1/memories", key, map[string]any{"agent_id": "c", "type": "note",
				"content": map[string]any{"content": fmt.Sprint("new ", n)}, "created_at": at})
			if r.status != http.StatusCreated {
				t.Errorf("concurrent insert: %d %s", r.status, r.raw)
				return
			}
			select {
			case inserted <- struct{}{}:
			default:
			}
		}
	}()
	var listed []memory.View
	cursor := ""
	for {
		path := "/v1/memories?agent_id=c&limit=4"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page memList
		s.request(t, "GET", path, key, nil).must(t, http.StatusOK, &page)
		listed = append(listed, page.Memories...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		select { // forget inserts made before this page was read...
		case <-inserted:
		default:
		}
		<-inserted // ...and wait for one after it
	}
	close(stop)
	<-done
	seen := map[string]int{}
	for _, v := range listed {
		seen[v.ID]++
		if seen[v.ID] > 1 {
			t.Fatalf("%s listed twice", v.ID)
		}
	}
	for _, c := range res.Memories {
		if seen[c.ID] != 1 {
			t.Fatalf("%s, present before the listing began, was skipped", c.ID)
		}
	}
	t.Logf("%d listed while others were inserted", len(listed))
}

func TestMemReadYourWrites(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{runQueue: true})
	_, key := s.user(t, "ryw@example.com")
	for i := range 30 {
		c := s.create(t, key, "ryw", "note", map[string]any{"content": fmt.Sprint("n", i)})
		s.get(t, key, c.ID)
		var page memList
		s.request(t, "GET", "/v1/memories?agent_id=ryw&limit=1", key, nil).must(t, http.StatusOK, &page)
		if len(page.Memories) != 1 || page.Memories[0].ID != c.ID {
			t.Fatalf("write %d not visible in the listing at once", i)
		}
		s.request(t, "DELETE", "/v1/memories/"+c.ID, key, nil).must(t, http.StatusOK, nil)
		if !s.get(t, key, c.ID).Forgotten {
			t.Fatalf("forget %d not visible at once", i)
		}
	}
}
