package testserver

import (
	"fmt"
	"strings"
	"testing"
)

// raceReport is how the race detector reports a race on stderr.
func raceReport(n int) []string {
	return []string{
		"==================",
		"WARNING: DATA RACE",
		fmt.Sprintf("Write at 0x00c000123456 by goroutine %d:", n),
		"  main.counter()",
		"      /src/main.go:12 +0x44",
		"Previous read at 0x00c000123456 by goroutine 7:",
		"  main.reader()",
		"==================",
	}
}

func TestRaceLogKeepsTheDetectorsReports(t *testing.T) {
	logged := func(chunks ...[]string) []string {
		var lines []string
		for _, c := range chunks {
			lines = append(lines, c...)
		}
		return lines
	}
	serving := []string{`time=2026-11-29T04:00:00Z level=INFO msg="engram serving" addr=127.0.0.1:1234`}
	var chatter []string
	for i := range 2000 { // more than the tail log keeps
		chatter = append(chatter, fmt.Sprintf("level=INFO msg=request n=%d", i))
	}
	cases := []struct {
		name  string
		lines []string
		want  []string // substrings of the reports; none: no report
		none  []string // what must not be in them
	}{
		{"a clean log has none", logged(serving, chatter), nil, nil},
		{"a report is kept whole among the log lines", logged(serving, raceReport(21), chatter),
			[]string{"WARNING: DATA RACE", "by goroutine 21", "Previous read"}, []string{"msg=request"}},
		{"every report is kept", logged(raceReport(21), chatter, raceReport(22)),
			[]string{"by goroutine 21", "by goroutine 22"}, []string{"msg=request"}},
		{"a report cut off by the end of the log is kept", logged(serving, raceReport(23)[:4]),
			[]string{"by goroutine 23", "main.counter()"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l raceLog
			for _, line := range c.lines {
				l.add(line)
			}
			got := l.String()
			if len(c.want) == 0 && got != "" {
				t.Fatalf("reports = %q, want none", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("reports lack %q:\n%s", w, got)
				}
			}
			for _, n := range c.none {
				if strings.Contains(got, n) {
					t.Errorf("reports hold log lines (%q):\n%s", n, got)
				}
			}
		})
	}
}
