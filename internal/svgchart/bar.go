package svgchart

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// Segment is one part of a stacked bar.
type Segment struct {
	Name  string
	Value float64
	Color string
}

// WriteStackedBar writes one horizontal bar split into the segments'
// shares, each with a tooltip "name value (share)"; a bar with no total
// draws an empty frame.
func WriteStackedBar(w io.Writer, width, height int, segs []Segment) error {
	var total float64
	for _, s := range segs {
		total += s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="bar" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img">`, width, height)
	x := 0.0
	for _, s := range segs {
		if s.Value <= 0 || total <= 0 {
			continue
		}
		wd := s.Value / total * float64(width)
		fmt.Fprintf(&b, `<rect x="%s" y="0" width="%s" height="%d" fill="%s"><title>%s %s (%.1f%%)</title></rect>`,
			num(x), num(wd), height, s.Color, html.EscapeString(s.Name), FormatNumber(s.Value), 100*s.Value/total)
		x += wd
	}
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="none" stroke="#888"/></svg>`, width, height)
	_, err := io.WriteString(w, b.String())
	return err
}
