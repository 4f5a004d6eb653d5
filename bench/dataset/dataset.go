// Package dataset reads the prompt files of bench's --dataset-path: a
// ShareGPT JSON array, or JSON Lines of prompts, messages or ShareGPT
// records, sampled as vllm bench serve samples them. Each Prompt becomes
// the workload item a request sends (Prompt.Item); the random dataset is
// the probe package's random workload and needs no file.
package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/vllm-prober/vllm-prober/internal/fileread"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// Load reads n prompts from a dataset file: a ShareGPT JSON array,
// or JSON Lines of {"prompt"}, {"messages"} or ShareGPT records (the probe
// package's dataset format, parsed by workload.DecodeDataset). ShareGPT
// records use their first turn as the prompt and the word count of the
// second as the output length; other records get outputLen. Entries are
// shuffled with seed (as vLLM samples them) and reused when the file holds
// fewer than n. Errors name the file and line.
func Load(path string, n, outputLen int, seed int64) ([]Prompt, error) {
	data, err := fileread.Read(path, fileread.BenchDatasetLimit)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	var prompts []Prompt
	add := func(r *workload.DatasetRecord) error {
		if p, ok := recordPrompt(r, outputLen); ok {
			prompts = append(prompts, p)
		}
		return nil
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		err = decodeShareGPT(trimmed, path, add)
	} else {
		err = workload.DecodeDataset(bytes.NewReader(data), path, add)
	}
	if err != nil {
		return nil, err
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("%s: no usable prompts in dataset", path)
	}
	s := uint64(seed)
	rand.New(rand.NewPCG(s, s)).Shuffle(len(prompts), func(i, j int) { prompts[i], prompts[j] = prompts[j], prompts[i] })
	out := make([]Prompt, n)
	for i := range out {
		out[i] = prompts[i%len(prompts)]
	}
	return out, nil
}

// decodeShareGPT reads a JSON array of records; errors name the entry.
func decodeShareGPT(data []byte, path string, fn func(*workload.DatasetRecord) error) error {
	var recs []workload.DatasetRecord
	if err := json.Unmarshal(data, &recs); err != nil {
		return fmt.Errorf("%s: invalid ShareGPT JSON: %w", path, err)
	}
	for i := range recs {
		if err := recs[i].Check(); err != nil {
			return fmt.Errorf("%s: entry %d: %w", path, i+1, err)
		}
		if err := fn(&recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// recordPrompt converts a checked record; ok is false for ShareGPT records
// too short to use (vLLM skips them too).
func recordPrompt(r *workload.DatasetRecord, outputLen int) (Prompt, bool) {
	switch {
	case r.Prompt != nil:
		return Prompt{Text: *r.Prompt, MaxTokens: outputLen}, true
	case len(r.Messages) > 0:
		return Prompt{Messages: r.Messages, MaxTokens: outputLen}, true
	case len(r.Conversations) < 2:
		return Prompt{}, false
	}
	in, reply := r.Conversations[0].Value, len(strings.Fields(r.Conversations[1].Value))
	return Prompt{Text: in, MaxTokens: reply}, strings.TrimSpace(in) != "" && reply > 0
}
