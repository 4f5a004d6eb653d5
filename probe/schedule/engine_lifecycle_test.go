package schedule

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// lifecycleSink logs PairStarted and PairStopped in order, and counts
// Offered calls made for a pair it was not told runs.
type lifecycleSink struct {
	mu       sync.Mutex
	events   []string
	live     map[pairKey]bool
	orphaned int
}

func newLifecycleSink() *lifecycleSink { return &lifecycleSink{live: map[pairKey]bool{}} }

func (s *lifecycleSink) PairStarted(p config.Pair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "start "+p.Key.String())
	s.live[p.Key] = true
}

func (s *lifecycleSink) PairStopped(key config.PairKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "stop "+key.String())
	delete(s.live, key)
}

func (s *lifecycleSink) Offered(target, probeName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live[pairKey{Target: target, Probe: probeName}] {
		s.orphaned++
	}
}

func (s *lifecycleSink) Finished(*probe.Result) {}

// take returns the events logged since the last take.
func (s *lifecycleSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.events
	s.events = nil
	return out
}

// TestEngineTellsSinksThePairs checks the pair lifecycle the engine owns:
// which PairStarted and PairStopped events each reload produces, in which
// order, and that no pair is offered before its sinks know it or after
// they were told it stopped.
func TestEngineTellsSinksThePairs(t *testing.T) {
	sink := newLifecycleSink()
	sf := &senderFactory{fail: map[string]error{}}
	h := newHarness(t, sf, EngineOptions{Sinks: []probe.Sink{sink}})
	a, b, c := testProbe("a", 50, 10), testProbe("b", 50, 10), testProbe("c", 50, 10)
	steps := []struct {
		name  string
		cfg   *config.Config
		fail  string // probe whose Sender cannot be built
		loops int    // loops running afterwards
		want  []string
	}{
		{"start in config order", testConfig([]string{"t1", "t2"}, a, b), "", 4,
			[]string{"start t1/a", "start t1/b", "start t2/a", "start t2/b"}},
		{"unchanged reload tells nothing", testConfig([]string{"t1", "t2"}, a, b), "", 4, nil},
		{"removed, changed and added", testConfig([]string{"t1"}, testProbe("a", 20, 10), c), "", 2,
			[]string{"stop t1/b", "stop t2/a", "stop t2/b", "start t1/a", "start t1/c"}},
		{"a pair that cannot start is not told", testConfig([]string{"t1"}, testProbe("a", 20, 10), c, b), "b", 2, nil},
		{"re-added", testConfig([]string{"t1", "t2"}, testProbe("a", 20, 10), c), "", 4,
			[]string{"start t2/a", "start t2/c"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			clear(sf.fail)
			if st.fail != "" {
				sf.fail[st.fail] = errors.New("no sender")
			}
			if err := h.engine.Apply(st.cfg); (err != nil) != (st.fail != "") {
				t.Fatalf("Apply: %v", err)
			}
			if got := sink.take(); !slices.Equal(got, st.want) {
				t.Errorf("events %q, want %q", got, st.want)
			}
			h.run(t, time.Second, st.loops)
		})
	}
	if sink.orphaned > 0 {
		t.Errorf("%d offers of pairs the sink did not know", sink.orphaned)
	}
}
