package processing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/engram-memory/engram/domain/memory"
)

// Item is one memory a processor proposes: canonical content of the
// transition's target type, a confidence, and the ids of the sources (of
// the pass's batch) it was derived from.
type Item struct {
	Type       memory.Type     `json:"type"`
	Content    json.RawMessage `json:"content"`
	Confidence float64         `json:"confidence"`
	Sources    []string        `json:"source_ids"`
}

// DefaultItemConfidence applies when a processor gives none.
const DefaultItemConfidence = 0.7

// MaxItemsPerPass bounds what one pass may propose, whatever a model says.
const MaxItemsPerPass = 100

// ErrMalformedOutput wraps every way a processor's answer breaks the
// contract; a pass records it as an error and proposes nothing.
var ErrMalformedOutput = errors.New("malformed processor output")

// modelItem is the JSON contract a language model must answer with: a
// JSON array of these (optionally inside a markdown code fence).
type modelItem struct {
	Content    json.RawMessage `json:"content"`
	Confidence *float64        `json:"confidence"`
	SourceIDs  []string        `json:"source_ids"`
}

// ParseModelOutput checks a model's answer against the contract for t:
// a JSON array of {content, confidence?, source_ids}, where content is
// valid content of t's target type and every source id is one of the
// batch's. Items that break the contract are returned as errors next to
// the valid ones; an answer that is not such an array is one error.
func ParseModelOutput(t Transition, answer string, batch []Source) ([]Item, []error) {
	text := strings.TrimSpace(answer)
	if strings.HasPrefix(text, "```") {
		text = strings.TrimPrefix(text, "```")
		text = strings.TrimPrefix(text, "json")
		text = strings.TrimSuffix(strings.TrimSpace(text), "```")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	var raw []modelItem
	if err := dec.Decode(&raw); err != nil {
		return nil, []error{fmt.Errorf("%w: not a JSON array of items: %v", ErrMalformedOutput, err)}
	}
	if dec.More() {
		return nil, []error{fmt.Errorf("%w: trailing data after the JSON array", ErrMalformedOutput)}
	}
	if len(raw) > MaxItemsPerPass {
		return nil, []error{fmt.Errorf("%w: %d items, at most %d per pass", ErrMalformedOutput, len(raw), MaxItemsPerPass)}
	}
	inBatch := make(map[string]bool, len(batch))
	for _, s := range batch {
		inBatch[s.ID] = true
	}
	var items []Item
	var errs []error
	for i, r := range raw {
		it, err := checkItem(t, r, inBatch)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: item %d: %v", ErrMalformedOutput, i, err))
			continue
		}
		items = append(items, it)
	}
	return items, errs
}

func checkItem(t Transition, r modelItem, inBatch map[string]bool) (Item, error) {
	if len(r.Content) == 0 {
		return Item{}, errors.New("content is missing")
	}
	content, err := normalizeProcessed(t.Target(), r.Content)
	if err != nil {
		return Item{}, fmt.Errorf("content is not a valid %s: %v", t.Target(), err)
	}
	conf := DefaultItemConfidence
	if r.Confidence != nil {
		conf = *r.Confidence
		if conf < 0 || conf > 1 {
			return Item{}, fmt.Errorf("confidence %v is outside 0..1", conf)
		}
	}
	if len(r.SourceIDs) == 0 {
		return Item{}, errors.New("source_ids is empty")
	}
	seen := map[string]bool{}
	var sources []string
	for _, id := range r.SourceIDs {
		if !inBatch[id] {
			return Item{}, fmt.Errorf("source id %q is not in the batch", id)
		}
		if !seen[id] {
			seen[id] = true
			sources = append(sources, id)
		}
	}
	sort.Strings(sources)
	return Item{Type: t.Target(), Content: content, Confidence: conf, Sources: sources}, nil
}

// Fingerprint identifies an item for deduplication of pending
// suggestions: the sha256 of its type, its canonical content and its
// sorted sources. Confidence is left out, so the same proposal with
// another confidence is still a duplicate.
func Fingerprint(it Item) string {
	sources := append([]string(nil), it.Sources...)
	sort.Strings(sources)
	var content any
	_ = json.Unmarshal(it.Content, &content) // canonical content was produced by json.Marshal
	canon, _ := json.Marshal(struct {
		Type    memory.Type `json:"type"`
		Content any         `json:"content"`
		Sources []string    `json:"sources"`
	}{it.Type, content, sources})
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// normalizeProcessed validates content proposed by a processor and marks
// it source_type "processing" unless the processor said otherwise.
func normalizeProcessed(t memory.Type, raw json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	if _, ok := fields["source_type"]; !ok {
		fields["source_type"] = json.RawMessage(`"processing"`)
	}
	withSource, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	return memory.NormalizeContent(t, withSource)
}
