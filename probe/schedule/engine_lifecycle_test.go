package schedule

import (
	"errors"
	"slices"
	"strings"
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

func (s *lifecycleSink) Offered(key config.PairKey) {
	target, probeName := key.Target, key.Probe
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
	// Stops come from the drains, in any order, after Apply's starts.
	stops := slices.IndexFunc(out, func(e string) bool { return strings.HasPrefix(e, "stop ") })
	if stops >= 0 {
		slices.Sort(out[stops:])
	}
	return out
}

// TestEngineTellsSinksThePairs checks the pair lifecycle the engine owns:
// which PairStarted and PairStopped events each reload produces, in which
// order (starts in config order during Apply; stops once each removed
// pair's requests have ended, in any order, listed here sorted after the
// starts), and that no pair is offered before its sinks know it or after
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
			[]string{"start t1/a", "start t1/c", "stop t1/b", "stop t2/a", "stop t2/b"}},
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
			h.engine.drains.Wait() // every removed pair has ended its requests
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
