package sqlite

import "fmt"

// Durability is when an appended event is on stable storage.
type Durability string

const (
	// Durable syncs the log before Append returns: an acknowledged write
	// survives an OS crash or a power loss. Concurrent appends share one
	// sync (group commit). The default.
	Durable Durability = "durable"
	// Relaxed leaves the log's writes to the OS: an acknowledged write
	// survives a crash of the process, but an OS crash or a power loss can
	// lose the last moments of writes (never corrupt the file).
	Relaxed Durability = "relaxed"
)

// ParseDurability reads "durable" or "relaxed"; "" is Durable.
func ParseDurability(s string) (Durability, error) {
	switch Durability(s) {
	case "", Durable:
		return Durable, nil
	case Relaxed:
		return Relaxed, nil
	}
	return "", fmt.Errorf("%q is neither %q nor %q", s, Durable, Relaxed)
}
