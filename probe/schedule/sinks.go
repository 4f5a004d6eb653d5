package schedule

import (
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// sinks fans the Engine's events out to several sinks, in order.
type sinks []probe.Sink

// PairStarted implements Sink.
func (ss sinks) PairStarted(p config.Pair) {
	for _, s := range ss {
		s.PairStarted(p)
	}
}

// PairStopped implements Sink.
func (ss sinks) PairStopped(key config.PairKey) {
	for _, s := range ss {
		s.PairStopped(key)
	}
}

// Offered implements Sink.
func (ss sinks) Offered(key config.PairKey) {
	for _, s := range ss {
		s.Offered(key)
	}
}

// Finished implements Sink.
func (ss sinks) Finished(r *probe.Result) {
	for _, s := range ss {
		s.Finished(r)
	}
}
