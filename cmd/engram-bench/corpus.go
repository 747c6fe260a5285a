package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// corpusRecord is one line of a benchmark corpus.jsonl (shared/bench/README).
// meta is deliberately not read: it must not reach the search.
type corpusRecord struct {
	ID        string    `json:"id"`
	AgentID   string    `json:"agent_id"`
	Type      string    `json:"type"` // plural: raw_entries or notes
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	Tags      []string  `json:"tags"`
	SourceIDs []string  `json:"source_ids"`
}

// queryRecord is one line of a benchmark queries.jsonl.
type queryRecord struct {
	ID       string   `json:"id"`
	AgentID  string   `json:"agent_id"`
	Query    string   `json:"query"`
	GoldIDs  []string `json:"gold_ids"`
	Category string   `json:"category"`
}

// resultLine is one line of a results.jsonl that score.py reads.
type resultLine struct {
	QueryID   string   `json:"query_id"`
	RankedIDs []string `json:"ranked_ids"`
}

// readJSONL reads one T per non-empty line.
func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// writeJSONL writes one JSON value per line.
func writeJSONL[T any](path string, rows []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// protocol is a benchmark protocol (shared/bench/README "two protocols").
type protocol string

const (
	protoTurns      protocol = "turns"       // raw_entries only, searched with types [raw_entries]
	protoTurnsNotes protocol = "turns+notes" // everything, all types, scored with --corpus
)

func parseProtocol(s string) (protocol, error) {
	switch p := protocol(s); p {
	case protoTurns, protoTurnsNotes:
		return p, nil
	}
	return "", usageErr("--protocol must be turns or turns+notes, not %q", s)
}

// ingestTypes are the record types a protocol stores.
func (p protocol) includes(recordType string) bool {
	return recordType == "raw_entries" || p == protoTurnsNotes
}

// searchTypes is the types filter of every query.
func (p protocol) searchTypes() []string {
	if p == protoTurns {
		return []string{"raw_entries"}
	}
	return nil
}

// byAgent groups records by agent in first-seen order, keeping record
// order within an agent.
func byAgent(recs []corpusRecord, keep func(corpusRecord) bool) (agents []string, groups map[string][]corpusRecord) {
	groups = map[string][]corpusRecord{}
	for _, r := range recs {
		if !keep(r) {
			continue
		}
		if _, ok := groups[r.AgentID]; !ok {
			agents = append(agents, r.AgentID)
		}
		groups[r.AgentID] = append(groups[r.AgentID], r)
	}
	return agents, groups
}
