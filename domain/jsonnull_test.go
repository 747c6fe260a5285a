package domain_test

import (
	"testing"

	"github.com/engram-memory/engram/domain"
)

// TestNullItemNamesTheList: a null item of a list, at any depth, is found
// with the path of its list and its index; a null field is not an item.
func TestNullItemNamesTheList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		list       string
		index      int
		found      bool
	}{
		{"a null field is absent, not an item", `{"tags":null,"content":{"a":null}}`, "", 0, false},
		{"no null at all", `{"tags":["a","null"],"n":[1,[2]]}`, "", 0, false},
		{"a null item of a top-level list", `{"tags":["a",null]}`, "tags", 1, true},
		{"a null item in a nested object", `{"content":{"focus_areas":[null]}}`, "content.focus_areas", 0, true},
		{"a null item inside a list of objects", `{"memories":[{"tags":["x"]},{"content":{"lessons":["l","m",null]}}]}`, "memories[1].content.lessons", 2, true},
		{"a null item of a list in a list", `{"m":[[1],[2,null]]}`, "m[1]", 1, true},
		{"a null memory of a batch", `{"agent_id":"a","memories":[null]}`, "memories", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			list, index, found := domain.NullItem([]byte(c.body))
			if list != c.list || index != c.index || found != c.found {
				t.Errorf("NullItem(%s) = %q, %d, %v; want %q, %d, %v", c.body, list, index, found, c.list, c.index, c.found)
			}
		})
	}
}
