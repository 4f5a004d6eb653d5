package ledger

import (
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

var _ probe.Sink = (*Ledger)(nil)

// PairStarted implements Sink: the ledger records requests, not pairs.
func (l *Ledger) PairStarted(config.Pair) {}

// PairStopped implements Sink: records of a removed pair stay in the
// ledger, those of its last requests included.
func (l *Ledger) PairStopped(config.PairKey) {}

// Offered implements Sink: a request is recorded once it has finished.
func (l *Ledger) Offered(config.PairKey) {}

// Finished implements Sink by writing r's record.
func (l *Ledger) Finished(r *probe.Result) { l.Write(r) }
