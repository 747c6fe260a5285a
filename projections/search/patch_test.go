package search_test

import (
	"encoding/json"

	"github.com/engram-memory/engram/commands"
)

func patchContent(raw string) commands.MemoryPatch {
	return commands.MemoryPatch{Content: json.RawMessage(raw)}
}

func commandsPatchTags(tags []string) commands.MemoryPatch {
	return commands.MemoryPatch{Tags: &tags}
}
