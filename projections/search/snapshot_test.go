package search_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	snapfile "github.com/engram-memory/engram/infra/snapshot"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/app/searchtest"
	"github.com/engram-memory/engram/projections/search"
)

// tailHistory changes the log after a snapshot: new memories in old and
// new agents, every kind of change to them and to memories the snapshot
// holds, and an agent the snapshot holds deleted and created again.
func tailHistory(t *testing.T, s *searchtest.Env, earlier []string) {
	ctx := context.Background()
	m := searchtest.Meta("u1")
	var made []string
	for i := range 16 {
		agent := []string{"shared", "late"}[i%2]
		made = append(made, s.Note(t, "u1", agent, fmt.Sprintf("kubernetes garden tail item %d", i), []string{fmt.Sprintf("t%d", i%3)}, t0.Add(time.Duration(i%5)*time.Hour)))
	}
	steps := []func() error{
		func() error { _, err := s.Memories.Forget(ctx, m, made[0], nil); return err },
		func() error { return s.Memories.Purge(ctx, m, made[1], nil) },
		func() error {
			_, err := s.Memories.Patch(ctx, m, made[2], patchContent(`{"content": "quarterly planning moved the tail item"}`))
			return err
		},
		func() error {
			_, err := s.Memories.Patch(ctx, m, made[3], commandsPatchTags([]string{"t9"}))
			return err
		},
		func() error { _, err := s.Memories.Forget(ctx, m, earlier[0], nil); return err },
		func() error { _, err := s.Memories.Recover(ctx, m, earlier[1], nil); return err },
		func() error { return s.Memories.Purge(ctx, m, earlier[2], nil) },
		func() error {
			_, err := s.Memories.Patch(ctx, m, earlier[3], patchContent(`{"content": "database outage rewrote this snapshot item"}`))
			return err
		},
		func() error { return s.Memories.DeleteAgent(ctx, searchtest.Meta("u2"), "doomed") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("tail step %d: %v", i, err)
		}
	}
	s.Note(t, "u2", "doomed", "heron quarry in the agent created again", nil, t0)
}

// tailProbes add the agents and memories of tailHistory to probes.
var tailProbes = []search.Request{
	{UserID: "u1", AgentID: "late", Query: "kubernetes garden", Limit: 100},
	{UserID: "u1", AgentID: "late", Query: "tail item", Limit: 100, IncludeForgotten: true, Filter: search.Filter{Tags: []string{"t1"}}},
	{UserID: "u1", AgentID: "shared", Query: "tail item planning outage", Limit: 100, IncludeForgotten: true},
	{UserID: "u1", AgentID: "shared", Query: "item", Limit: 100, Filter: search.Filter{CreatedAfter: t0.Add(time.Hour), CreatedBefore: t0.Add(4 * time.Hour), Types: []memory.Type{memory.Note}}},
	{UserID: "u2", AgentID: "doomed", Query: "heron quarry", IncludeForgotten: true},
}

func snapshotAll(t *testing.T, s *searchtest.Env) []search.Response {
	out := snapshot(t, s)
	for _, p := range tailProbes {
		for _, mode := range allModes {
			p.Mode, p.Explain = mode, true
			out = append(out, run(t, s, p))
		}
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from+"/.", to).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v: %s", from, err, out)
	}
}

func sameResponses(t *testing.T, what string, got, want []search.Response) {
	t.Helper()
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, w := ids(got[i]), ids(want[i])
			at := 0
			for at < len(g) && at < len(w) && g[at] == w[at] {
				at++
			}
			t.Fatalf("%s: probe %d differs from result %d on:\ngot  %v\nwant %v\n(%d and %d results; first got %+v\nfirst want %+v)", what, i, at,
				g[at:min(len(g), at+3)], w[at:min(len(w), at+3)], len(g), len(w), firstFrom(got[i], at), firstFrom(want[i], at))
		}
	}
}

// A start from index snapshots older than the state (re-reading what the
// log changed after them) serves every probe, in every mode and with
// every filter, exactly as a start that refills the indexes from the
// state, and as the stack did before it stopped; and so it goes on after
// a write (read-your-writes).
func TestStartFromSnapshotsEqualsRefill(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	s, err := searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	history(t, s)
	for i := range 3 {
		s.Note(t, "u2", "doomed", fmt.Sprintf("heron quarry %d in an agent deleted after the snapshot", i), nil, t0)
	}
	var earlier []string
	for i := range 4 {
		earlier = append(earlier, s.Note(t, "u1", "shared", fmt.Sprintf("snapshot item %d kubernetes", i), []string{"t1"}, t0.Add(time.Duration(i)*time.Hour)))
	}
	if _, err := s.Memories.Forget(ctx, searchtest.Meta("u1"), earlier[1], nil); err != nil {
		t.Fatal(err)
	}
	s.Close() // a clean stop saves the images
	old := t.TempDir()
	copyDir(t, filepath.Join(dir, "snapshots"), old)

	s, err = searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Keyword.StartedFrom(); !ok {
		t.Fatal("the keyword index did not start from its snapshot")
	}
	tailHistory(t, s, earlier)
	live := snapshotAll(t, s)
	s.Close()
	// As after a crash: the images are older than the state.
	if err := os.RemoveAll(filepath.Join(dir, "snapshots")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "snapshots"), 0o700); err != nil {
		t.Fatal(err)
	}
	copyDir(t, old, filepath.Join(dir, "snapshots"))
	refillDir := t.TempDir()
	copyDir(t, dir, refillDir)
	if err := os.RemoveAll(filepath.Join(refillDir, "snapshots")); err != nil {
		t.Fatal(err)
	}

	fromImage, err := searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer fromImage.Close()
	refilled, err := searchtest.Open(ctx, refillDir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer refilled.Close()
	tag, ok := fromImage.Keyword.StartedFrom()
	if !ok {
		t.Fatal("the keyword index did not start from its (older) snapshot")
	}
	if _, ok := fromImage.Vectors.StartedFrom(); !ok {
		t.Fatal("the vector index did not start from its (older) snapshot")
	}
	if pos, _ := fromImage.Keyword.Position(ctx); tag.Checkpoint >= pos {
		t.Fatalf("the image is at %d, the state at %d: no tail was re-read", tag.Checkpoint, pos)
	}
	if _, ok := refilled.Vectors.StartedFrom(); ok {
		t.Fatal("the stack without snapshots claims to have started from one")
	}
	if _, ok := refilled.Keyword.StartedFrom(); ok {
		t.Fatal("the stack without snapshots claims to have started from one")
	}
	want := snapshotAll(t, refilled)
	if n := len(want[len(want)-len(tailProbes)*len(allModes)].Results); n < 5 {
		t.Fatalf("the tail's probe finds too little to compare: %d", n)
	}
	sameResponses(t, "started from the snapshot, against a refill", snapshotAll(t, fromImage), want)
	sameResponses(t, "a refill, against the stack before it stopped", want, live)

	// The same write to both: the new memory's ids differ, so the
	// refilled stack's is renamed to the other's before comparing.
	mine := fromImage.Note(t, "u1", "late", "read your writes heron kubernetes", []string{"t1"}, t0)
	theirs := refilled.Note(t, "u1", "late", "read your writes heron kubernetes", []string{"t1"}, t0)
	summary := func(rs []search.Response, rename string) string {
		var b strings.Builder
		for _, r := range rs {
			for _, res := range r.Results {
				explain, err := json.Marshal(res.Explain)
				if err != nil {
					t.Fatal(err)
				}
				id := res.Memory.ID
				if id == rename {
					id = mine
				}
				fmt.Fprintf(&b, "%s %v %v %s\n", id, res.Score, res.Strength, explain)
			}
			b.WriteString("--\n")
		}
		return b.String()
	}
	got, want2 := summary(snapshotAll(t, fromImage), ""), summary(snapshotAll(t, refilled), theirs)
	if !strings.Contains(got, mine) {
		t.Fatal("the write is not read back")
	}
	if got != want2 {
		t.Fatalf("after a write, the stack started from the snapshot answers otherwise than the refilled one:\n%s\nwant\n%s", got, want2)
	}
}

func firstFrom(r search.Response, at int) any {
	if at >= len(r.Results) {
		return nil
	}
	x := r.Results[at]
	explain, _ := json.Marshal(x.Explain)
	return fmt.Sprintf("%s %v %s", x.Memory.ID, x.Score, explain)
}

// An image in file format 1 (the header unpadded, the body unaligned) is
// not used: the index is refilled and answers as before, and the next
// clean stop replaces the image with one of the current format, which
// the start after it uses.
func TestSnapshotOfAnEarlierFileFormatIsRefilled(t *testing.T) {
	restartsAfterRewritingImages(t, formatOne, func(start int) (keyword, vectors bool) {
		return start > 0, start > 0
	})
}

// A keyword image of body format 1 (decoded into the heap, before the
// image was read in place) is refused as another version: the keyword
// index is refilled and answers as before, and the next start uses the
// image of the current format the refill wrote. A vector image whose
// header names body format 1 is still opened, and the vector index
// starts from it (vectorindex reads format-1 bodies, with their slot
// tables rebuilt: TestReadsAnImageOfFormatOne), so no stack refills its
// vector index for the change.
func TestKeywordImageOfBodyFormatOneIsRefilled(t *testing.T) {
	bodyFormatOne := func(data []byte) []byte {
		const bodyVersionAt = 8 + 4 // after the magic and the file format version
		binary.LittleEndian.PutUint32(data[bodyVersionAt:], 1)
		return data
	}
	restartsAfterRewritingImages(t, bodyFormatOne, func(start int) (keyword, vectors bool) {
		return start > 0, true
	})
}

// restartsAfterRewritingImages fills a stack, stops it cleanly, rewrites
// both index images with rewrite, then starts it twice: each start must
// answer every probe as before the rewrite, and start each index from its
// image exactly when fromImage says so for that start (0 or 1).
func restartsAfterRewritingImages(t *testing.T, rewrite func([]byte) []byte, fromImage func(start int) (keyword, vectors bool)) {
	t.Helper()
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	s, err := searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	history(t, s)
	want := probeAll(t, s)
	s.Close()
	for _, kind := range []string{"keyword", "vectors"} {
		path := filepath.Join(dir, "snapshots", kind+".snap")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, rewrite(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		s, err := searchtest.Open(ctx, dir, frozen)
		if err != nil {
			t.Fatal(err)
		}
		wantKeyword, wantVectors := fromImage(i)
		_, keywordImage := s.Keyword.StartedFrom()
		_, vectorImage := s.Vectors.StartedFrom()
		if keywordImage != wantKeyword || vectorImage != wantVectors {
			t.Errorf("start %d: started from images: keyword %v, vectors %v; want keyword %v, vectors %v", i, keywordImage, vectorImage, wantKeyword, wantVectors)
		}
		sameResponses(t, fmt.Sprintf("start %d", i), probeAll(t, s), want)
		s.Close()
	}
}

// formatOne rewrites a snapshot file in file format 1's layout: the same
// header without the zero padding before the body.
func formatOne(d []byte) []byte {
	const fixedEnd = 8 + 4 + 4 + 8 + 8 + 4 + 2 + 2 // magic and the fixed fields
	strEnd := fixedEnd + int(binary.LittleEndian.Uint16(d[fixedEnd-4:])) + int(binary.LittleEndian.Uint16(d[fixedEnd-2:]))
	bodyAt := strEnd
	for bodyAt%snapfile.BodyAlign != 0 {
		bodyAt++
	}
	out := append([]byte(nil), d[:strEnd]...)
	binary.LittleEndian.PutUint32(out[8:], 1)
	return append(out, d[bodyAt:]...)
}

func probeAll(t *testing.T, s *searchtest.Env) []search.Response {
	out := make([]search.Response, 0, len(probes))
	for _, req := range probes {
		out = append(out, run(t, s, req))
	}
	return out
}

// A model switch after the vector image is not caught up from it (the
// switch re-indexes the agent in another space, which the re-reads of the
// changed memories do not redo): the vector index is refilled, the
// keyword index still starts from its image, and both answer as before.
func TestModelSwitchAfterTheImageRefillsTheVectorIndex(t *testing.T) {
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	s, err := searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	history(t, s)
	s.Close()
	images := t.TempDir()
	copyDir(t, filepath.Join(dir, "snapshots"), images)

	s, err = searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	space, ok := s.Vectors.AgentSpace("u1", "shared")
	if !ok {
		t.Fatal("agent shared not found")
	}
	switched := memory.AgentModelSwitched{AgentRef: memory.AgentRef{UserID: "u1", AgentID: "shared"}, Model: space.Model, Dimensions: space.Dimensions}
	if _, err := s.Writer.Append(ctx, memory.AgentStream("u1", "shared"), domain.ExpectAny, searchtest.Meta("u1"), switched); err != nil {
		t.Fatal(err)
	}
	want := probeAll(t, s)
	s.Close()
	copyDir(t, images, filepath.Join(dir, "snapshots")) // the images from before the switch

	s, err = searchtest.Open(ctx, dir, frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, keywordImage := s.Keyword.StartedFrom()
	_, vectorImage := s.Vectors.StartedFrom()
	if !keywordImage || vectorImage {
		t.Errorf("started from images: keyword %v, vectors %v; want the keyword image alone", keywordImage, vectorImage)
	}
	sameResponses(t, "after a switch past the image", probeAll(t, s), want)
}
