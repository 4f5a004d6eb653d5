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

// printTable writes rows as a Markdown table.
func printTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| benchmark | case | result | target | |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		cells := []string{r.bench, r.name, r.result, r.target, r.verdict}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}
