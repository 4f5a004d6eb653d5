package bench

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is a progress bar on a terminal; on anything else it is silent.
// A nil *progress is valid and does nothing.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress returns a bar of total steps written to w when w is a
// terminal, else nil. A negative total gives a spinner with a count.
func newProgress(w io.Writer, total int, description string) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total == 0 {
		return nil
	}
	return &progress{bar: progressbar.NewOptions(max(total, -1),
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// Add advances the bar by n; it is safe for concurrent use.
func (p *progress) Add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

// Describe changes the text before the bar.
func (p *progress) Describe(s string) {
	if p != nil {
		p.bar.Describe(s)
	}
}

// Finish completes and clears the bar.
func (p *progress) Finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}
