// Package workload hands out what a probe sends: fixed prompts, a dataset
// file (JSON Lines, ShareGPT conversations included) or random prompts of
// drawn lengths, each as an Item ready for the probe's API.
package workload

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/vllm-prober/vllm-prober/config"
)

// Item is what one request sends.
type Item struct {
	Prompt    any              // completions: a string or a []int of token ids
	Messages  []config.Message // chat
	MaxTokens int
	Expect    *config.Expect // per-prompt checks, nil when none
	// PromptTokens is the exact prompt length when the workload knows it
	// (token-id prompts), else 0; used only when the server sends no usage.
	PromptTokens int
	// Index is the item's place in the probe's prompts list, which keys
	// its output fingerprint; 0 for other workloads.
	Index int
	// Seed, when set, is sent as the request's seed (config.Prompt.Seed).
	Seed *int64
}

// Source hands out the prompts of a probe: the next one, or the one of
// request seq, the same whatever order or subset of requests asks for it
// (so a schedule split among workers sends the prompts one process
// would). Implementations are safe for concurrent use.
type Source interface {
	Next(ctx context.Context, model string) Item
	ItemAt(ctx context.Context, model string, seq uint64) Item
}

// TokenCounter counts the tokens of a text on the target (POST /tokenize).
type TokenCounter func(ctx context.Context, model, text string) (int, error)

// New builds the probe's workload. Dataset files are read here, so
// a bad line stops the probe from starting.
func New(p config.Probe, count TokenCounter) (Source, error) {
	w := p.Workload
	switch {
	case w.Random != nil:
		return newRandomWorkload(p, count), nil
	case len(w.Prompts) > 0:
		items := make([]Item, len(w.Prompts))
		for i := range w.Prompts {
			items[i] = ItemFor(p, w.Prompts[i].Prompt, w.Prompts[i].Messages)
			items[i].Index, items[i].Seed = i, w.Prompts[i].Seed
			if e := &w.Prompts[i].Expect; e.Regex.Regexp != nil || e.Contains != "" {
				items[i].Expect = e
			}
		}
		return &listWorkload{items: items}, nil
	case w.File != "":
		return loadFileWorkload(p, w.File)
	}
	return nil, errors.New("probe has no workload")
}

// ItemFor makes a fixed prompt fit the probe's API: chat gets a user
// message from a bare prompt, completions get the messages' contents.
func ItemFor(p config.Probe, prompt string, messages []config.Message) Item {
	it := Item{MaxTokens: p.Request.MaxTokens}
	if p.API == config.APIChat {
		if len(messages) == 0 {
			messages = []config.Message{{Role: "user", Content: prompt}}
		}
		it.Messages = messages
		return it
	}
	if prompt == "" {
		parts := make([]string, 0, len(messages))
		for _, m := range messages {
			parts = append(parts, m.Content)
		}
		prompt = strings.Join(parts, "\n")
	}
	it.Prompt = prompt
	return it
}

// listWorkload serves fixed items round robin.
type listWorkload struct {
	items []Item
	n     atomic.Uint64
}

func (l *listWorkload) Next(context.Context, string) Item {
	i := l.n.Add(1) - 1
	return l.items[i%uint64(len(l.items))]
}

// ItemAt returns request seq's item, items[(seq-1) mod len], the one Next
// hands out when requests come in order.
func (l *listWorkload) ItemAt(_ context.Context, _ string, seq uint64) Item {
	n := uint64(len(l.items))
	return l.items[(seq+n-1)%n]
}
