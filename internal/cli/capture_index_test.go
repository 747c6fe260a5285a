package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/projections"
)

// A local capture writes no index (docs/snapshots.md, "Writes that load no
// index"): the index projections advance their state alone, and the next
// local search restores each index from its image and re-reads what was
// captured after it. So a capture is found at once in every search mode,
// its vector computed at the capture; neither the capture nor a search
// that caught up a short tail saves an image, and a search that caught up
// a tail of projections.DefaultSnapshotTail events or more saves new ones.
func TestCaptureIsFoundByTheNextLocalSearchInEveryMode(t *testing.T) {
	t.Parallel()
	h := newCLIHome(t, "ENGRAM_LOG_LEVEL=info")
	images := filepath.Join(h.dir, "stacks", "st", "snapshots")
	h.ok("-s", "st", "note", "the heron nests by the quarry")
	h.ok("-s", "st", "search", "--local", "heron") // no images yet: the indexes are filled, and their images saved at close
	saved := readImages(t, images)
	if len(saved) != 2 {
		t.Fatalf("images after the first search: %v, want the keyword and the vector index's", slices.Collect(maps.Keys(saved)))
	}

	const text = "a kingfisher dives at the weir"
	var created struct {
		ID        string `json:"id"`
		Embedding struct {
			Status string `json:"status"`
		} `json:"embedding"`
	}
	h.json(&created, "-s", "st", "note", text)
	if created.Embedding.Status != "embedded" {
		t.Fatalf("the capture's embedding is %q, want it embedded at the capture", created.Embedding.Status)
	}
	if now := readImages(t, images); !maps.Equal(now, saved) {
		t.Fatal("the capture saved an index image")
	}

	reread := regexp.MustCompile(`msg="index started from its snapshot" index=(keyword|vector)s? .* memories_reread=1 `)
	for _, tc := range []struct {
		mode    string
		reReads []string // the indexes that must say they re-read the capture after their image
	}{
		{"hybrid", []string{"keyword", "vector"}},
		{"keyword", []string{"keyword"}},
		{"vector", []string{"keyword", "vector"}}, // a vector search opens both indexes, as a hybrid one
	} {
		t.Run(tc.mode, func(t *testing.T) {
			h := h.in(t)
			r := h.ok("-s", "st", "search", "--local", "--json", "--mode", tc.mode, text)
			var out struct {
				Results []struct {
					ID string `json:"id"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Results) == 0 || out.Results[0].ID != created.ID {
				t.Errorf("%s search for the capture's text: %+v, want %s first", tc.mode, out.Results, created.ID)
			}
			var said []string
			for _, m := range reread.FindAllStringSubmatch(r.stderr, -1) {
				said = append(said, m[1])
			}
			if strings.Join(said, " ") != strings.Join(tc.reReads, " ") {
				t.Errorf("indexes that caught up from their image with the capture: %v, want %v\n%s", said, tc.reReads, r.stderr)
			}
			if now := readImages(t, images); !maps.Equal(now, saved) {
				t.Error("a search that caught up a one-memory tail saved an index image")
			}
		})
	}

	var items strings.Builder
	for i := range projections.DefaultSnapshotTail {
		fmt.Fprintf(&items, `{"type": "note", "content": {"content": "imported note %d about the weir"}}`+"\n", i)
	}
	if r := h.run(items.String(), "-s", "st", "import", "-"); r.code != 0 {
		t.Fatalf("import: exit %d\n%s", r.code, r.stderr)
	}
	if now := readImages(t, images); !maps.Equal(now, saved) {
		t.Fatal("an import saved an index image")
	}
	h.ok("-s", "st", "search", "--local", "weir")
	now := readImages(t, images)
	for name := range saved {
		if now[name] == saved[name] {
			t.Errorf("%s: the search that caught up %d imports did not save a new image", name, projections.DefaultSnapshotTail)
		}
	}
	r := h.ok("-s", "st", "search", "--local", "--json", "--mode", "keyword", "imported note 7 about the weir")
	if !strings.Contains(r.stderr, `msg="index started from its snapshot" index=keyword `) || !strings.Contains(r.stderr, "memories_reread=0 ") {
		t.Errorf("the search after the new images re-read memories or refilled:\n%s", r.stderr)
	}
}

// readImages maps each index image file in dir to its contents.
func readImages(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".snap" { // not an image: a stamp (docs/snapshots.md#verified-once)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}
