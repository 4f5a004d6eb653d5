// Package svgtest checks the SVG documents svgchart writes in tests.
package svgtest

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// Doc checks that b is well-formed XML and returns its text.
func Doc(t testing.TB, b []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	paths := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not valid XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "path" {
				paths++
			}
		case xml.CharData:
			text.Write(el)
		}
	}
	if paths < 10 {
		t.Errorf("SVG has %d paths, want the curves drawn", paths)
	}
	return text.String()
}
