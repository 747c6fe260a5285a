package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// NullItem finds the first null that is an item of an array in data, one
// JSON value: the array's path (memories[2].content.focus_areas) and the
// item's index. encoding/json would decode it as the item type's zero
// value ("" for a string), a value the client did not send; null is
// "absent" for an optional field (docs/api.md#absent-values), and an item
// of a list cannot be absent. Only typed values are walked (a memory's
// content): a free-form object may hold any JSON, null items too.
func NullItem(data []byte) (list string, index int, found bool) {
	type frame struct {
		array     bool
		path, key string
		index     int
		wantKey   bool
	}
	var stack []frame
	dec := json.NewDecoder(bytes.NewReader(data))
	// childPath is the path of the value that starts now in the top frame.
	childPath := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.array {
			return fmt.Sprintf("%s[%d]", top.path, top.index)
		}
		if top.path == "" {
			return top.key
		}
		return top.path + "." + top.key
	}
	// valueDone moves the top frame past the value that just ended.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.array {
			top.index++
		} else {
			top.wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", 0, false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{array: t == '[', path: childPath(), wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		case string:
			if top := len(stack) - 1; top >= 0 && stack[top].wantKey {
				stack[top].key, stack[top].wantKey = t, false
				continue
			}
		case nil:
			if top := len(stack) - 1; top >= 0 && stack[top].array {
				return stack[top].path, stack[top].index, true
			}
		}
		valueDone()
	}
}
