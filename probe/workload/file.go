package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/fileread"
)

// maxDatasetLine bounds one line of a dataset file.
const maxDatasetLine = 16 << 20

// DatasetRecord is one entry of a dataset: {"prompt": ...},
// {"messages": [...]} or a ShareGPT record {"conversations": [{"from":
// "human", "value": ...}, ...]}.
type DatasetRecord struct {
	Prompt        *string          `json:"prompt"`
	Messages      []config.Message `json:"messages"`
	Conversations []DatasetTurn    `json:"conversations"`
}

// DatasetTurn is one turn of a ShareGPT conversation.
type DatasetTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

// Check reports a record without any of the known keys, an empty prompt
// or a message without a role.
func (d *DatasetRecord) Check() error {
	switch {
	case d.Prompt != nil:
		if *d.Prompt == "" {
			return errors.New(`empty "prompt"`)
		}
	case len(d.Messages) > 0:
		for i, m := range d.Messages {
			if m.Role == "" {
				return fmt.Errorf("messages[%d]: missing role", i)
			}
		}
	case len(d.Conversations) == 0:
		return errors.New(`need one of "prompt", "messages" or "conversations"`)
	}
	return nil
}

// DecodeDataset reads JSON Lines of DatasetRecords from r and calls fn with
// each checked record of a non-empty line. Errors, fn's included, name
// name and the line.
func DecodeDataset(r io.Reader, name string, fn func(rec *DatasetRecord) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxDatasetLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := decodeDatasetLine(line, fn); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", name, n+1, err)
	}
	return nil
}

func decodeDatasetLine(line []byte, fn func(rec *DatasetRecord) error) error {
	var d DatasetRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one value on the line")
	}
	if err := d.Check(); err != nil {
		return err
	}
	return fn(&d)
}

// loadFileWorkload reads a JSONL dataset. Any bad line is an error naming
// the file and line.
func loadFileWorkload(p config.Probe, path string) (Source, error) {
	f, err := fileread.Open(path, fileread.DatasetLimit)
	if err != nil {
		return nil, fmt.Errorf("open dataset: %w", err)
	}
	defer f.Close()
	var items []Item
	err = DecodeDataset(fileread.Limit(f, path, fileread.DatasetLimit), path, func(d *DatasetRecord) error {
		it, err := recordItem(p, d)
		items = append(items, it)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no prompts in dataset", path)
	}
	return &listWorkload{items: items}, nil
}

// recordItem converts a checked record.
func recordItem(p config.Probe, d *DatasetRecord) (Item, error) {
	switch {
	case d.Prompt != nil:
		return ItemFor(p, *d.Prompt, nil), nil
	case len(d.Messages) > 0:
		return ItemFor(p, "", d.Messages), nil
	}
	// As vLLM's ShareGPT dataset: the first human turn is the prompt.
	for _, c := range d.Conversations {
		if (c.From == "human" || c.From == "user") && c.Value != "" {
			return ItemFor(p, c.Value, nil), nil
		}
	}
	return Item{}, errors.New("conversations: no human turn")
}
