package client

import (
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/fingerprint"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// newHasher returns the output fingerprint hasher of one request, nil when
// the probe has no fingerprint.
func (r *Requester) newHasher() *fingerprint.Hasher {
	if f := r.probe.Fingerprint; f != nil {
		return fingerprint.NewHasher(f.Tokens)
	}
	return nil
}

// setFingerprint records the answer's fingerprint in res when the stream
// completed: a request cut short says nothing of what the model answers
// (docs/design.md, "Output fingerprint").
func (m *measurement) setFingerprint(res *probe.Result, complete bool, item workload.Item) {
	if m.fp == nil || !complete || res.Disposition != "" {
		return
	}
	res.Fingerprint = &probe.OutputFingerprint{Prompt: item.Index, Hash: m.fp.Sum()}
}
