package main

import (
	"fmt"
	"strings"
)

// tableMetrics are the columns of the quality table (issue 4, item 3).
var tableMetrics = []string{"R@5", "R@10", "MRR@10", "nDCG@10"}

// tableRow is one system in the quality table.
type tableRow struct {
	Name  string
	Score groupScore
}

// formatTable renders rows as an aligned text table, or as a Markdown
// table when md is set.
func formatTable(rows []tableRow, md bool) string {
	head := append([]string{"mode", "n"}, tableMetrics...)
	cells := [][]string{head}
	for _, r := range rows {
		line := []string{r.Name, fmt.Sprint(r.Score.N)}
		for _, m := range tableMetrics {
			v, _ := r.Score.metric(m)
			line = append(line, fmt.Sprintf("%.3f", v))
		}
		cells = append(cells, line)
	}
	var b strings.Builder
	if md {
		for i, line := range cells {
			b.WriteString("| " + strings.Join(line, " | ") + " |\n")
			if i == 0 {
				b.WriteString("|---|" + strings.Repeat("---:|", len(line)-1) + "\n")
			}
		}
		return b.String()
	}
	width := make([]int, len(head))
	for _, line := range cells {
		for i, c := range line {
			width[i] = max(width[i], len(c))
		}
	}
	for _, line := range cells {
		for i, c := range line {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(&b, "  %*s", width[i], c)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// subsetRows picks one subset of every system's scores, in order.
func subsetRows(names []string, scores map[string]scoreFile, subset string) []tableRow {
	var rows []tableRow
	for _, n := range names {
		if s, ok := scores[n]; ok {
			rows = append(rows, tableRow{Name: n, Score: s.Groups[subset]})
		}
	}
	return rows
}
