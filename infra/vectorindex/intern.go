package vectorindex

import "strings"

// interner maps the few distinct type and tag strings of a collection to
// small integer codes, so per-item metadata stays pointer-free and compact.
// Codes are never reused; a collection rarely sees more than a few hundred.
type interner struct {
	codes map[string]uint32
	names []string
	bytes int // string bytes held, for Stats
}

func (in *interner) lookup(s string) (uint32, bool) {
	c, ok := in.codes[s]
	return c, ok
}

func (in *interner) intern(s string) uint32 {
	if c, ok := in.codes[s]; ok {
		return c
	}
	if in.codes == nil {
		in.codes = make(map[string]uint32)
	}
	s = strings.Clone(s) // do not pin the caller's (possibly larger) buffer
	c := uint32(len(in.names))
	in.codes[s] = c
	in.names = append(in.names, s)
	in.bytes += len(s)
	return c
}

func (in *interner) len() int { return len(in.names) }

func (in *interner) heldBytes() int64 {
	return int64(in.bytes) + int64(len(in.names))*(16+mapEntryBytes)
}
