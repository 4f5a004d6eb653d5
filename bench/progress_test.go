package bench

import (
	"bytes"
	"io"
	"os"
	"testing"
)

func TestProgressSilentOffTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tt := range []struct {
		name string
		w    io.Writer
	}{{"buffer", &bytes.Buffer{}}, {"pipe", w}, {"nil", nil}} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProgress(tt.w, 10, "x")
			if p != nil {
				t.Fatalf("progress bar on a %s, want none off a terminal", tt.name)
			}
			p.Add(1) // a nil bar is valid and silent
			p.Describe("y")
			p.Finish()
		})
	}
}
