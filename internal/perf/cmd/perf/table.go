package main

import (
	"fmt"
	"io"
	"strings"
)

// row is one line of the summary table.
type row struct {
	bench, name, result, target, verdict string
}

// partRows are one part's rows and the machine's 1-minute load average
// before and after it.
type partRows struct {
	rows       []row
	loadBefore string
	loadAfter  string
}

// printTable writes the parts' rows as a Markdown table.
func printTable(w io.Writer, parts []partRows) {
	fmt.Fprintln(w, "| benchmark | case | result | target | | load average |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, p := range parts {
		for _, r := range p.rows {
			cells := []string{r.bench, r.name, r.result, r.target, r.verdict, p.loadBefore + " → " + p.loadAfter}
			for i, c := range cells {
				cells[i] = strings.ReplaceAll(c, "|", `\|`)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
	}
}
