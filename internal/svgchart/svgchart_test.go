package svgchart

import (
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// element is one parsed SVG element with its attributes and title.
type element struct {
	name  string
	attrs map[string]string
	title string
}

// parse checks that out is well-formed XML and returns its elements.
func parse(t *testing.T, out string) []element {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(out))
	var els []element
	var inTitle bool
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return els
		}
		if err != nil {
			t.Fatalf("not well-formed SVG: %v\n%s", err, out)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			inTitle = tk.Name.Local == "title"
			if inTitle {
				continue
			}
			e := element{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			els = append(els, e)
		case xml.CharData:
			if inTitle && len(els) > 0 {
				els[len(els)-1].title = string(tk)
			}
		case xml.EndElement:
			inTitle = false
		}
	}
}

func find(els []element, class string) []element {
	var out []element
	for _, e := range els {
		if e.attrs["class"] == class {
			out = append(out, e)
		}
	}
	return out
}

func TestChartGeometry(t *testing.T) {
	c := Chart{
		Title: "TTFT <ms>", Width: 346, Height: 158, // plot area 292x100 above one legend row
		Series: []Series{{Name: "p50", Color: "#1f77b4", Points: []Point{{0, 0}, {1, 50}, {2, math.NaN()}, {3, 100}, {4, 250}}}},
		Rules:  []Rule{{Name: "SLO 80", Color: "#d62728", Value: 80}},
		Marks:  []Mark{{X: 2, Y: 50, Label: "fail: timeout"}},
		YMax:   200,
	}
	var b strings.Builder
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	els := parse(t, b.String())
	series := find(els, "series")
	if len(series) != 1 {
		t.Fatalf("%d series paths, want 1", len(series))
	}
	// x: 0..4 over 46..338 (73 per unit); y: 0..200 over 116..16 (0.5 per
	// unit); the NaN starts a new subpath; 250 is clipped at the top.
	if got, want := series[0].attrs["d"], "M46 116L119 91M265 66L338 16"; got != want {
		t.Errorf("series path %q, want %q", got, want)
	}
	if dots := find(els, "dot"); len(dots) != 0 {
		t.Errorf("%d dots, want none: no point is alone", len(dots))
	}
	rules := find(els, "rule")
	if len(rules) != 1 || rules[0].attrs["d"] != "M46 76L338 76" || rules[0].title != "SLO 80" {
		t.Errorf("rule %+v, want a line at y=76 titled SLO 80", rules)
	}
	marks := find(els, "mark")
	if len(marks) != 1 || marks[0].title != "fail: timeout" || marks[0].attrs["d"] != "M188 87l8 8m0-8l-8 8" {
		t.Errorf("mark %+v, want a cross centred on (192, 91)", marks)
	}
	if !strings.Contains(b.String(), "TTFT &lt;ms&gt;") {
		t.Error("title not escaped")
	}
}

// TestChartTitleAndYLabel: a chart with both a title and a Y label draws
// them on lines of their own (they used to share the top line, the label
// running into the title), both above the plot.
func TestChartTitleAndYLabel(t *testing.T) {
	for _, c := range []Chart{
		{Title: "One prober", YLabel: "% of goal", Width: 346, Height: 158},
		{YLabel: "% of goal", Width: 346, Height: 158},
	} {
		c.Series = []Series{{Name: "a", Points: []Point{{0, 1}, {1, 2}}}}
		var b strings.Builder
		if err := c.Write(&b); err != nil {
			t.Fatal(err)
		}
		var titleY, labelY, plotTop float64 = -1, -1, -1
		for _, e := range parse(t, b.String()) {
			switch {
			case e.name == "text" && e.attrs["font-weight"] == "bold":
				titleY = atof(t, e.attrs["y"])
			case e.name == "text" && e.attrs["x"] == "0":
				labelY = atof(t, e.attrs["y"])
			case e.name == "path" && e.attrs["stroke"] == "#888":
				plotTop = atof(t, strings.Fields(strings.TrimPrefix(strings.Split(e.attrs["d"], "V")[0], "M"))[1])
			}
		}
		if labelY < 0 || plotTop < 0 || labelY >= plotTop {
			t.Errorf("%q: Y label at y=%v, plot top %v: want the label above the plot", c.Title, labelY, plotTop)
		}
		if c.Title != "" && labelY-titleY < fontSize {
			t.Errorf("%q: title at y=%v, Y label at y=%v: want a line apart", c.Title, titleY, labelY)
		}
		if c.Title == "" && plotTop != marginTop {
			t.Errorf("no title: plot top %v, want %v (unchanged)", plotTop, marginTop)
		}
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("coordinate %q: %v", s, err)
	}
	return v
}

func TestChartLonePoint(t *testing.T) {
	c := Chart{Width: 346, Height: 158, YMax: 200, Series: []Series{{Name: "p99", Color: "red",
		Points: []Point{{0, math.NaN()}, {1, 50}, {2, math.NaN()}, {3, 100}, {4, 100}}}}}
	var b strings.Builder
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	dots := find(parse(t, b.String()), "dot")
	if len(dots) != 1 || dots[0].attrs["cx"] != "119" || dots[0].attrs["cy"] != "91" {
		t.Errorf("dots %+v, want one at (119, 91), the point between gaps", dots)
	}
}

func TestChartScalesToData(t *testing.T) {
	c := Chart{Series: []Series{{Name: "a", Points: []Point{{10, 3}, {20, 7.2}}}}, Rules: []Rule{{Name: "objective", Value: 9}}}
	f := c.frame(320, 128)
	if f.x0 != 10 || f.x1 != 20 || f.y0 != 0 || f.y1 != 10 {
		t.Errorf("frame x %v..%v y %v..%v, want x 10..20, y 0..10 (the rule 9 rounded up)", f.x0, f.x1, f.y0, f.y1)
	}
	var b strings.Builder
	if err := (Chart{Title: "empty"}).Write(&b); err != nil {
		t.Fatal(err)
	}
	if len(find(parse(t, b.String()), "series")) != 0 {
		t.Error("a chart without points draws a series")
	}
}

func TestStackedBar(t *testing.T) {
	var b strings.Builder
	err := WriteStackedBar(&b, 200, 10, []Segment{{"accepted", 3, "green"}, {"timeout", 0, "red"}, {"server_failure", 1, "orange"}})
	if err != nil {
		t.Fatal(err)
	}
	var rects []element
	for _, e := range parse(t, b.String()) {
		if e.name == "rect" && e.attrs["fill"] != "none" {
			rects = append(rects, e)
		}
	}
	if len(rects) != 2 {
		t.Fatalf("%d segments, want 2 (zero counts drawn as nothing)", len(rects))
	}
	if rects[0].attrs["width"] != "150" || rects[1].attrs["x"] != "150" || rects[1].attrs["width"] != "50" {
		t.Errorf("segments %+v, want widths 150 and 50", rects)
	}
	if rects[1].title != "server_failure 1 (25.0%)" {
		t.Errorf("tooltip %q", rects[1].title)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, ceil, step float64 }{{0, 1, 1}, {0.7, 0.8, 1}, {1.2, 1.5, 2}, {3, 3, 5}, {7.2, 8, 10}, {21, 25, 50}, {120, 150, 200}} {
		if got := niceCeil(c.in); got != c.ceil {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.ceil)
		}
		if got := niceStep(c.in); got != c.step {
			t.Errorf("niceStep(%v) = %v, want %v", c.in, got, c.step)
		}
	}
	c := Chart{XMin: 0, XMax: 20}
	if got := c.xTicks(c.frame(320, 140)); !slices.Equal(got, []float64{0, 5, 10, 15, 20}) {
		t.Errorf("ticks of 0..20: %v, want steps of 5", got)
	}
}
