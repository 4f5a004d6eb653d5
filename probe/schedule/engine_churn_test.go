package schedule

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// replicaPair is the pair of probe p on the replica addr of target fleet.
func replicaPair(addr string, p config.Probe) config.Pair {
	return config.Pair{
		Key:         pairKey{Target: "fleet", Probe: p.Name, Replica: addr},
		Target:      config.Target{Name: "fleet", URL: "http://" + addr},
		Probe:       p,
		Fingerprint: "fp",
	}
}

// replicaSeqs keeps the seqs of one replica's finished results.
type replicaSeqs struct {
	addr     string
	mu       sync.Mutex
	offered  int
	finished []uint64
}

func (s *replicaSeqs) PairStarted(config.Pair)    {}
func (s *replicaSeqs) PairStopped(config.PairKey) {}

func (s *replicaSeqs) Offered(key config.PairKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key.Replica == s.addr {
		s.offered++
	}
}

func (s *replicaSeqs) Finished(r *probe.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Replica == s.addr {
		s.finished = append(s.finished, r.Seq)
	}
}

// settled returns the seqs once every offered request has finished.
func (s *replicaSeqs) settled(t *testing.T) []uint64 {
	t.Helper()
	waitFor(t, "the replica's requests to finish", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.finished) == s.offered
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.finished)
	slices.Sort(out)
	return out
}

// TestEngineStateBoundedUnderChurn churns 1,000 replica addresses through
// ApplyPairs, one running at a time: the engine keeps the state of at most
// KeptStopped stopped pairs besides the running one. A replica that comes
// back while its state is kept continues its seq; one that comes back after
// its state was forgotten gets seqs above all it had, so no two of its
// results share a seq.
func TestEngineStateBoundedUnderChurn(t *testing.T) {
	const kept = 8
	back := &replicaSeqs{addr: "10.0.0.1:8000"}
	sf := &senderFactory{fail: map[string]error{}}
	h := newHarness(t, sf, EngineOptions{KeptStopped: kept, Sinks: []probe.Sink{back}})
	p := testProbe("chat", 10, 10)
	visit := func() []uint64 {
		t.Helper()
		if err := h.engine.ApplyPairs([]config.Pair{replicaPair(back.addr, p)}); err != nil {
			t.Fatal(err)
		}
		h.run(t, 2*time.Second, 1)
		return back.settled(t)
	}
	churn := func(from, n int) {
		t.Helper()
		for i := range n {
			addr := fmt.Sprintf("10.1.%d.%d:8000", (from+i)/250, (from+i)%250)
			if err := h.engine.ApplyPairs([]config.Pair{replicaPair(addr, p)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	states := func() int {
		h.engine.mu.Lock()
		defer h.engine.mu.Unlock()
		return len(h.engine.states)
	}

	first := visit()
	if len(first) == 0 || first[0] != 1 || first[len(first)-1] != uint64(len(first)) {
		t.Fatalf("first visit's seqs %v, want 1..n", first)
	}
	churn(0, kept/2)
	second := visit()
	if len(second) <= len(first) || second[len(first)] != uint64(len(first))+1 {
		t.Fatalf("seqs %v after a return within the bound, want the first visit's %v continued", second, first)
	}
	churn(kept/2, 1000)
	waitFor(t, "stopped states to be forgotten", func() bool { return states() <= kept+1 })
	third := visit()
	if len(third) <= len(second) {
		t.Fatalf("no request on the third visit: %v", third)
	}
	for i := 1; i < len(third); i++ {
		if third[i] == third[i-1] {
			t.Fatalf("seq %d of the returning replica twice: %v", third[i], third)
		}
	}
	if n := states(); n > kept+1 {
		t.Errorf("engine keeps %d pair states after 1,000 replicas came and went, want at most %d", n, kept+1)
	}
}
