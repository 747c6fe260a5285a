package cli

import (
	"bytes"
	"testing"
	"time"
)

// TestProgressBarLines: the bar, its percentage, counts, rate and ETA as
// drawn on a terminal; redraws within 100 ms are skipped except the last.
func TestProgressBarLines(t *testing.T) {
	start := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		unit  string
		total int
		steps []struct {
			at   time.Duration
			done int
		}
		want string
	}{
		{"a known total", "events", 4000, []struct {
			at   time.Duration
			done int
		}{{2 * time.Second, 1000}, {2050 * time.Millisecond, 1500}, {4 * time.Second, 4000}},
			"\rpushed [######------------------]  25% 1000/4000 events  500/s  ETA 6s\x1b[K" +
				"\rpushed [########################] 100% 4000/4000 events  1000/s\x1b[K\n"},
		{"bytes", "bytes", 2 << 20, []struct {
			at   time.Duration
			done int
		}{{time.Second, 1 << 20}},
			"\rpushed [############------------]  50% 1.0MiB/2.0MiB  1.0MiB/s  ETA 1s\x1b[K\n"},
		{"an unknown total", "lines", 0, []struct {
			at   time.Duration
			done int
		}{{100 * time.Millisecond, 42}},
			"\rpushed 42 lines\x1b[K\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			clock := start
			p := &progress{w: &buf, enabled: true, label: "pushed", unit: tc.unit, total: tc.total, start: start, now: func() time.Time { return clock }}
			for _, s := range tc.steps {
				clock = start.Add(s.at)
				p.update(s.done)
			}
			p.finish()
			if got := buf.String(); got != tc.want {
				t.Fatalf("drew %q\nwant  %q", got, tc.want)
			}
		})
	}
}
