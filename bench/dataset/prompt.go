package dataset

import (
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// Prompt is one dataset entry: a request's input chosen by bench instead of
// the probe's workload, request i sending the run's prompt i-1.
type Prompt struct {
	// Text is the completions prompt, or the chat user message when
	// Messages is empty.
	Text string
	// Messages is sent as is by chat requests; completions join their
	// contents as workload.ItemFor does.
	Messages []config.Message
	// MaxTokens is max_tokens (completions) or max_completion_tokens
	// (chat); 0 = the probe's request.max_tokens.
	MaxTokens int
}

// Item converts the prompt for probe p.
func (pr Prompt) Item(p config.Probe) workload.Item {
	it := workload.ItemFor(p, pr.Text, pr.Messages)
	if pr.MaxTokens > 0 {
		it.MaxTokens = pr.MaxTokens
	}
	return it
}
