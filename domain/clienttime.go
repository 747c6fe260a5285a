package domain

import "time"

// EarliestClientYear is the first year of a time a request may carry: a
// memory's created_at, a pushed event's time and the times of its
// payload, a search's created_after and created_before. Go's zero time,
// 0001-01-01T00:00:00Z, is what encoding/json leaves for a time left out
// or null, so a server taking it would store (or filter by) a time it
// cannot tell from none; and the event stores keep an event's time in
// int64 nanoseconds, which end before 1678. No Engram log holds a time
// before the Unix epoch.
const EarliestClientYear = 1970

// EarliestClientTime is EarliestClientYear's first instant, which a
// refusal names.
const EarliestClientTime = "1970-01-01T00:00:00Z"

// CheckClientTime refuses a time written before EarliestClientYear. It
// reads the year as written, in the time's own offset (as time.Parse and
// encoding/json keep it), which is what the document's pattern checks:
// 1970-01-01T00:30:00+01:00 is taken by both.
func CheckClientTime(field string, t time.Time) error {
	if t.Year() < EarliestClientYear {
		return Invalid(field, "%s must be a time of the year %d or later, got %s", field, EarliestClientYear, t.Format(time.RFC3339Nano)).
			WithDetail("minimum", EarliestClientTime)
	}
	return nil
}
