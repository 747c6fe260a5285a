package vectorindex

import (
	"math"
	"slices"
	"time"
)

// Filter restricts a search. The zero Filter matches everything.
type Filter struct {
	// Types: the item's type must be one of these; empty means all types.
	Types []string
	// Tags: the item must carry every one of these tags.
	Tags []string
	// CreatedAfter is inclusive (>=), CreatedBefore exclusive (<); the zero
	// time leaves that side unbounded.
	CreatedAfter, CreatedBefore time.Time
}

// matcher is a Filter compiled against one collection's interned codes. It is
// only valid while the collection's read lock is held.
type matcher struct {
	typeOK []bool   // indexed by type code; nil: any type
	tags   []uint32 // sorted tag codes the item must all carry
	lo, hi int64    // inclusive bounds on created (unix nanos)
	none   bool     // provably matches nothing (unknown type or tag, empty window)
	active bool     // restricts anything at all
}

func (c *collection) compile(f Filter) matcher {
	m := matcher{lo: math.MinInt64, hi: math.MaxInt64}
	if len(f.Types) > 0 {
		m.active = true
		m.typeOK = make([]bool, c.typeNames.len())
		any := false
		for _, t := range f.Types {
			if code, ok := c.typeNames.lookup(t); ok {
				m.typeOK[code] = true
				any = true
			}
		}
		m.none = !any
	}
	if len(f.Tags) > 0 {
		m.active = true
		m.tags = make([]uint32, 0, len(f.Tags))
		for _, t := range f.Tags {
			code, ok := c.tagNames.lookup(t)
			if !ok {
				m.none = true // nobody carries a tag the collection has never seen
				break
			}
			m.tags = append(m.tags, code)
		}
		slices.Sort(m.tags)
		m.tags = slices.Compact(m.tags)
	}
	if !f.CreatedAfter.IsZero() {
		m.active = true
		m.lo = unixNanos(f.CreatedAfter)
	}
	if !f.CreatedBefore.IsZero() {
		m.active = true
		b := unixNanos(f.CreatedBefore)
		if b == math.MinInt64 {
			m.none = true
		} else {
			m.hi = b - 1 // exclusive bound as an inclusive one
		}
	}
	if m.lo > m.hi {
		m.none = true
	}
	return m
}

// match reports whether slot is live and satisfies m.
func (c *collection) match(m *matcher, slot uint32) bool {
	if c.nDead > 0 && c.isDead(slot) {
		return false
	}
	if !m.active {
		return true
	}
	if m.typeOK != nil && !m.typeOK[c.types[slot]] {
		return false
	}
	if t := c.created[slot]; t < m.lo || t > m.hi {
		return false
	}
	return len(m.tags) == 0 || c.hasAllTags(slot, m.tags)
}

// hasAllTags: both lists are sorted, so one merge pass decides all-of.
func (c *collection) hasAllTags(slot uint32, want []uint32) bool {
	n := int(c.tagN[slot])
	if n < len(want) {
		return false
	}
	have := c.tagArena[c.tagOff[slot] : int(c.tagOff[slot])+n]
	i := 0
	for _, w := range want {
		for i < len(have) && have[i] < w {
			i++
		}
		if i == len(have) || have[i] != w {
			return false
		}
		i++
	}
	return true
}

// Creation times are stored as unix nanos. The zero time sorts before every
// real one; times outside int64 nanos (years <1678 or >2262) are clamped.
func unixNanos(t time.Time) int64 {
	const edgeSec = math.MaxInt64/1_000_000_000 - 1 // seconds safely inside the int64-nanos range
	switch sec := t.Unix(); {
	case t.IsZero():
		return math.MinInt64
	case sec < -edgeSec:
		return math.MinInt64 + 1
	case sec > edgeSec:
		return math.MaxInt64
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
