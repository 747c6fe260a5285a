package memory

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/engram-memory/engram/domain"
)

var fuzzTypes = []Type{Episode, Belief, Note, Value, Goal, Playbook, RawEntry, Relationship, Drive}

// FuzzNormalizeContent: any bytes as the content of any type either fail
// with an invalid-request error naming a field, or normalize to JSON that
// is a fixed point (normalizing it again changes nothing) and whose indexed
// text can be computed.
func FuzzNormalizeContent(f *testing.F) {
	for i, t := range fuzzTypes {
		f.Add(uint8(i), []byte(minimal[t]))
		f.Add(uint8(i), []byte(`{"confidence":2,"tags":null,"is_protected":true,"source_type":"seed"}`))
	}
	f.Fuzz(func(t *testing.T, typ uint8, raw []byte) {
		mt := fuzzTypes[int(typ)%len(fuzzTypes)]
		out, err := NormalizeContent(mt, raw)
		if err != nil {
			if domain.ErrorKind(err) != domain.KindInvalid {
				t.Fatalf("%s %q: error of kind %v: %v", mt, raw, domain.ErrorKind(err), err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s %q: normalized to invalid JSON %q", mt, raw, out)
		}
		again, err := NormalizeContent(mt, out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("%s: normalizing %q again gave %q, %v", mt, out, again, err)
		}
		if _, err := IndexedText(mt, out); err != nil {
			t.Fatalf("%s: indexed text of %q: %v", mt, out, err)
		}
	})
}
