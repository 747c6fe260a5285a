package main

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/engram-memory/engram/client"
)

func TestReadFixtureAndGroup(t *testing.T) {
	recs, err := readJSONL[corpusRecord]("testdata/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	qs, err := readJSONL[queryRecord]("testdata/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 30 || len(qs) != 5 || qs[0].GoldIDs[0] != "fixture-a:D1:1" {
		t.Fatalf("%d records, %d queries: %+v", len(recs), len(qs), qs[0])
	}
	agents, groups := byAgent(recs, func(r corpusRecord) bool { return protoTurns.includes(r.Type) })
	if !reflect.DeepEqual(agents, []string{"fixture-a", "fixture-b"}) || len(groups["fixture-a"]) != 15 || len(groups["fixture-b"]) != 12 {
		t.Fatalf("agents %v, sizes %d %d", agents, len(groups["fixture-a"]), len(groups["fixture-b"]))
	}
	if groups["fixture-a"][0].ID != "fixture-a:D1:1" || groups["fixture-a"][0].CreatedAt.IsZero() {
		t.Fatalf("order or time lost: %+v", groups["fixture-a"][0])
	}

	out := filepath.Join(t.TempDir(), "r.jsonl")
	want := []resultLine{{QueryID: "q1", RankedIDs: []string{"a", "b"}}, {QueryID: "q2", RankedIDs: []string{}}}
	if err := writeJSONL(out, want); err != nil {
		t.Fatal(err)
	}
	got, err := readJSONL[resultLine](out)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip %+v, %v", got, err)
	}
	if _, err := readJSONL[corpusRecord]("testdata/score-sample.json"); err == nil {
		t.Fatal("multi-line JSON read as JSONL")
	}
}

func TestContentOf(t *testing.T) {
	tests := []struct {
		rec     corpusRecord
		want    any
		wantErr bool
	}{
		{corpusRecord{Type: "raw_entries", Text: "hi"}, client.RawEntryContent{Content: "hi"}, false},
		{corpusRecord{Type: "notes", Text: "obs"}, client.NoteContent{Content: "obs", NoteType: "observation"}, false},
		{corpusRecord{Type: "beliefs", Text: "x"}, nil, true},
	}
	for _, tc := range tests {
		got, err := contentOf(tc.rec)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("contentOf(%+v) = %+v, %v", tc.rec, got, err)
		}
	}
}
