package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress draws a progress bar for long work (export, import, sync,
// rebuild, re-embedding waits) on stderr, one line rewritten in place:
//
//	imported [##########----------]  50% 5000/10000 events  1234/s  ETA 4s
//
// It draws only when stderr is a terminal and --quiet is not given: a pipe
// or a file gets nothing, so scripts parse stdout and stderr as before.
// The standard library and x/term (already a dependency, for the TTY
// check) are enough for one line; a bar library would add a dependency
// for nothing the line needs. Redraws are throttled to ten a second.
type progress struct {
	w       io.Writer
	enabled bool
	label   string
	unit    string
	total   int // 0: unknown (a count and a rate, no bar)
	done    int
	start   time.Time
	drawn   time.Time
	shown   bool
	now     func() time.Time
}

// progressWidth is the bar's width in cells.
const progressWidth = 24

// progress returns the command's bar for work of total units (0: unknown).
func (c *cli) progress(label string, total int) *progress {
	return newProgress(c.stderr, c.quiet, label, total)
}

// newProgress returns a bar drawn on w when w is a terminal and not quiet.
func newProgress(w io.Writer, quiet bool, label string, total int) *progress {
	f, ok := w.(*os.File)
	enabled := ok && !quiet && term.IsTerminal(int(f.Fd()))
	return &progress{w: w, enabled: enabled, label: label, total: max(total, 0), now: time.Now, start: time.Now()}
}

// withUnit names what is counted ("events", "bytes"); bytes are shown in
// KiB/MiB.
func (p *progress) withUnit(unit string) *progress {
	p.unit = unit
	return p
}

// setTotal changes the amount of work once it is known.
func (p *progress) setTotal(total int) { p.total = max(total, 0) }

// update records that done units are done and redraws at most ten times a
// second (and always at the end).
func (p *progress) update(done int) {
	p.done = done
	if !p.enabled {
		return
	}
	now := p.now()
	if p.shown && now.Sub(p.drawn) < 100*time.Millisecond && (p.total == 0 || done < p.total) {
		return
	}
	p.drawn, p.shown = now, true
	fmt.Fprint(p.w, "\r"+p.line(now)+"\x1b[K")
}

// line is the bar as drawn at now.
func (p *progress) line(now time.Time) string {
	var b strings.Builder
	b.WriteString(p.label)
	if p.total > 0 {
		frac := min(float64(p.done)/float64(p.total), 1)
		cells := int(frac * progressWidth)
		fmt.Fprintf(&b, " [%s%s] %3d%%", strings.Repeat("#", cells), strings.Repeat("-", progressWidth-cells), int(frac*100))
		fmt.Fprintf(&b, " %s/%s", p.amount(p.done), p.amount(p.total))
	} else {
		fmt.Fprintf(&b, " %s", p.amount(p.done))
	}
	if p.unit != "" && p.unit != "bytes" {
		b.WriteString(" " + p.unit)
	}
	elapsed := now.Sub(p.start).Seconds()
	if elapsed > 0.5 && p.done > 0 {
		rate := float64(p.done) / elapsed
		fmt.Fprintf(&b, "  %s/s", p.amount(int(rate)))
		if p.total > p.done && rate > 0 {
			fmt.Fprintf(&b, "  ETA %s", (time.Duration(float64(p.total-p.done)/rate) * time.Second).Round(time.Second))
		}
	}
	return b.String()
}

// amount formats n units: bytes in KiB or MiB, counts as they are.
func (p *progress) amount(n int) string {
	if p.unit != "bytes" {
		return fmt.Sprint(n)
	}
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// finish ends the progress line.
func (p *progress) finish() {
	if p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}
