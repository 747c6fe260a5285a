package domain_test

import (
	"encoding/json"
	"testing"

	"github.com/engram-memory/engram/domain"
)

type greeting struct {
	Text string   `json:"text"`
	Tags []string `json:"tags"`
}

type textOnly struct {
	Text string `json:"text"`
}

// An event carrying its decoded payload hands it to a Decode of the same
// type without parsing (the decoded value here differs from the JSON on
// purpose, to tell the two apart); any other type is parsed from the JSON.
func TestDecodeUsesTheDecodedPayloadOfItsType(t *testing.T) {
	raw, _ := json.Marshal(greeting{Text: "from json", Tags: []string{"a"}})
	e := domain.Event{Payload: raw}.WithDecoded(&greeting{Text: "decoded once", Tags: []string{"b"}})

	var same greeting
	if err := e.Decode(&same); err != nil || same.Text != "decoded once" || len(same.Tags) != 1 || same.Tags[0] != "b" {
		t.Fatalf("same type: %+v, %v; want the decoded payload", same, err)
	}
	var other textOnly
	if err := e.Decode(&other); err != nil || other.Text != "from json" {
		t.Fatalf("another type: %+v, %v; want the JSON parsed", other, err)
	}
	var plain greeting
	if err := (domain.Event{Payload: raw}).Decode(&plain); err != nil || plain.Text != "from json" {
		t.Fatalf("without a decoded payload: %+v, %v", plain, err)
	}
}
