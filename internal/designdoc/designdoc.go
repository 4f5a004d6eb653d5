// Package designdoc reads the interface contract in docs/design.md, so that
// tests check the code against the document instead of against a copy of
// it.
package designdoc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// metricsHeading matches the heading of the "Metrics" section, whatever
// its number.
var metricsHeading = regexp.MustCompile(`^## (\d+\. )?Metrics$`)

// metricName matches one backquoted metric name of a table row, with an
// optional label list that is not part of the name.
var metricName = regexp.MustCompile("`([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*\\})?`")

// MetricNames returns the metric names of the table in the "Metrics"
// section of docs/design.md under root (the module's root), in table
// order, without their label lists.
func MetricNames(root string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		return nil, fmt.Errorf("read design: %w", err)
	}
	var names []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case metricsHeading.MatchString(line):
			in = true
		case in && strings.HasPrefix(line, "## "):
			in = false
		case in && strings.HasPrefix(line, "| `"):
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			for _, m := range metricName.FindAllStringSubmatch(cell, -1) {
				names = append(names, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read design: %w", err)
	}
	if len(names) == 0 {
		return nil, errors.New("read design: no metric table in the Metrics section of docs/design.md")
	}
	return names, nil
}
