package sqlite

import (
	"database/sql"
	"fmt"
	"time"
)

// dbTimeLayout is how read models store times: UTC with a fixed width, so
// text order is time order and exports are byte-stable.
const dbTimeLayout = "2006-01-02T15:04:05.000000000Z"

func dbTime(t time.Time) string { return t.UTC().Format(dbTimeLayout) }

// parseDBTime reads a stored time; NULL is the zero time.
func parseDBTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	t, err := time.Parse(dbTimeLayout, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: stored time %q: %w", s.String, err)
	}
	return t, nil
}
