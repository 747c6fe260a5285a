// Package serverversion compares the version a search server reports with
// the oldest an adapter works with; the Qdrant and Meilisearch adapters
// both refuse an older server at start.
package serverversion

import (
	"strconv"
	"strings"
)

// AtLeast reports whether version ("1.17.1", "1.13.0-rc.1") is at least
// major.minor; a version without a numeric major and minor is not.
func AtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	gotMajor, err1 := strconv.Atoi(parts[0])
	gotMinor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return gotMajor > major || gotMajor == major && gotMinor >= minor
}
