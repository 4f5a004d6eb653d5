package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/vllm-prober/vllm-prober/config"
)

// maxDatasetLine bounds one line of a dataset file.
const maxDatasetLine = 16 << 20

// datasetLine is one JSONL line: {"prompt": ...}, {"messages": [...]} or a
// ShareGPT record {"conversations": [{"from": "human", "value": ...}, ...]}.
type datasetLine struct {
	Prompt        *string          `json:"prompt"`
	Messages      []config.Message `json:"messages"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// loadFileWorkload reads a JSONL dataset. Any bad line is an error naming
// the file and line.
func loadFileWorkload(p config.Probe, path string) (workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open dataset: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	var items []workItem
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		it, err := parseDatasetLine(p, line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no prompts in dataset", path)
	}
	return &listWorkload{items: items}, nil
}

func parseDatasetLine(p config.Probe, line []byte) (workItem, error) {
	var d datasetLine
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&d); err != nil {
		return workItem{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return workItem{}, errors.New("invalid JSON: more than one value on the line")
	}
	switch {
	case d.Prompt != nil:
		if *d.Prompt == "" {
			return workItem{}, errors.New(`empty "prompt"`)
		}
		return promptItem(p, *d.Prompt, nil), nil
	case len(d.Messages) > 0:
		for i, m := range d.Messages {
			if m.Role == "" {
				return workItem{}, fmt.Errorf("messages[%d]: missing role", i)
			}
		}
		return promptItem(p, "", d.Messages), nil
	case len(d.Conversations) > 0:
		// As vLLM's ShareGPT dataset: the first human turn is the prompt.
		for _, c := range d.Conversations {
			if (c.From == "human" || c.From == "user") && c.Value != "" {
				return promptItem(p, c.Value, nil), nil
			}
		}
		return workItem{}, errors.New("conversations: no human turn")
	}
	return workItem{}, errors.New(`need one of "prompt", "messages" or "conversations"`)
}
