package openloop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/testclock"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
)

// blockingSender holds every request until all of them have started, so a
// closed-loop runner would never get past the first.
type blockingSender struct {
	started sync.WaitGroup
	release chan struct{}
	calls   atomic.Int32
}

func (b *blockingSender) Do(ctx context.Context, res *probe.Result) {
	b.calls.Add(1)
	b.started.Done()
	select {
	case <-b.release:
		res.Disposition = probe.Accepted
	case <-ctx.Done():
		res.Disposition, res.Reason = probe.Cancelled, probe.ReasonShutdown
	}
}

func (b *blockingSender) Close() {}

func TestExecuteOpenLoop(t *testing.T) {
	offsets := []time.Duration{0, 10 * time.Millisecond, 2 * time.Second}
	s := &blockingSender{release: make(chan struct{})}
	s.started.Add(len(offsets))
	go func() {
		s.started.Wait()
		close(s.release)
	}()
	clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	done := make(chan *Run)
	finished := atomic.Int32{}
	go func() {
		done <- Execute(context.Background(), Options{Target: "t", Probe: "p", Offsets: offsets, Sender: s, FirstSeq: 7,
			Now: clock.Now, Sleep: clock.Sleep, OnFinish: func(*probe.Result) { finished.Add(1) }})
	}()
	var run *Run
	select {
	case run = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("runner stuck after %d sends: it waits for responses instead of sending on schedule", s.calls.Load())
	}
	for i, r := range run.Results {
		want := run.Start.Add(offsets[i])
		if !r.Scheduled.Equal(want) || r.Seq != uint64(7+i) || r.Target != "t" || r.Probe != "p" || r.Disposition != probe.Accepted {
			t.Errorf("result %d: seq %d scheduled %v disposition %s, want seq %d at %v accepted", i, r.Seq, r.Scheduled, r.Disposition, 7+i, want)
		}
	}
	if finished.Load() != 3 || run.Span != 2*time.Second {
		t.Errorf("OnFinish called %d times, span %v; want 3 and 2s", finished.Load(), run.Span)
	}
}

func TestExecuteDrain(t *testing.T) {
	s := &blockingSender{release: make(chan struct{})} // never released
	s.started.Add(2)
	run := Execute(context.Background(), Options{Offsets: []time.Duration{0, 0}, Sender: s, Drain: 50 * time.Millisecond})
	for _, r := range run.Results {
		if r.Disposition != probe.Unfinished || r.Error == "" {
			t.Errorf("request %d ended %s %q, want unfinished after the drain", r.Seq, r.Disposition, r.Error)
		}
	}
}

// holdSender keeps every request until its context ends.
type holdSender struct{ calls atomic.Int32 }

func (h *holdSender) Do(ctx context.Context, res *probe.Result) {
	h.calls.Add(1)
	<-ctx.Done()
	res.Disposition, res.Reason = probe.Cancelled, probe.ReasonShutdown
}

func (h *holdSender) Close() {}

// TestExecuteMaxInFlight checks the daemon's max_in_flight rule: a request
// whose time comes with the cap outstanding is not sent and ends
// cancelled/in_flight_cap, and every offered request is still accounted for.
func TestExecuteMaxInFlight(t *testing.T) {
	tests := []struct {
		name        string
		maxInFlight int
		wantSent    int
	}{{"capped at two", 2, 2}, {"no cap", 0, 4}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &holdSender{}
			clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			run := Execute(context.Background(), Options{Offsets: []time.Duration{0, 0, time.Second, time.Second},
				Sender: s, MaxInFlight: tt.maxInFlight, Drain: 50 * time.Millisecond, Now: clock.Now, Sleep: clock.Sleep})
			count := map[string]int{}
			for _, r := range run.Results {
				count[string(r.Disposition)+"/"+r.Reason]++
			}
			want := map[string]int{"unfinished/": tt.wantSent}
			if n := 4 - tt.wantSent; n > 0 {
				want["cancelled/in_flight_cap"] = n
			}
			if fmt.Sprint(count) != fmt.Sprint(want) || int(s.calls.Load()) != tt.wantSent {
				t.Errorf("dispositions %v after %d sends, want %v", count, s.calls.Load(), want)
			}
		})
	}
}

// TestExecuteShardsUnion checks that the shards of one schedule, run from
// a common start, offer exactly the whole schedule: every planned request
// once, at the same time and with the same Seq as a one-process run.
func TestExecuteShardsUnion(t *testing.T) {
	offsets := Schedule(50, 20, 1, 7)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	execute := func(s Shard) *Run {
		clock := testclock.New(start.Add(-time.Second))
		return Execute(context.Background(), Options{Offsets: offsets, Sender: acceptSender{}, Start: start, Shard: s,
			Now: clock.Now, Sleep: clock.Sleep})
	}
	whole := map[uint64]time.Time{}
	for _, r := range execute(Shard{}).Results {
		whole[r.Seq] = r.Scheduled
	}
	for _, n := range []int{1, 2, 3, 7} {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			union := map[uint64]time.Time{}
			for i := range n {
				run := execute(Shard{Index: i, Count: n})
				for k, r := range run.Results {
					if _, dup := union[r.Seq]; dup {
						t.Errorf("seq %d offered by two shards", r.Seq)
					}
					if int(r.Seq-1)%n != i || run.Ended[k].IsZero() {
						t.Errorf("shard %d/%d offered seq %d (ended %v)", i, n, r.Seq, run.Ended[k])
					}
					union[r.Seq] = r.Scheduled
				}
			}
			if len(union) != len(whole) {
				t.Fatalf("union of %d shards has %d requests, want %d", n, len(union), len(whole))
			}
			for seq, at := range whole {
				if !union[seq].Equal(at) {
					t.Errorf("seq %d scheduled at %v in the shards, %v in one process", seq, union[seq], at)
				}
			}
		})
	}
}

// acceptSender accepts every request at once.
type acceptSender struct{}

func (acceptSender) Do(_ context.Context, res *probe.Result) { res.Disposition = probe.Accepted }
func (acceptSender) Close()                                  {}

// preparingSender is a Preparer that notes which seq it prepared when, and
// what each request was sent with.
type preparingSender struct {
	now  func() time.Time
	mu   sync.Mutex
	made map[*client.Prepared]string // "seq@offset"
	sent map[uint64]string           // by seq: its preparation, or "unprepared"
}

func (p *preparingSender) Prepare(seq uint64) *client.Prepared {
	pr := new(client.Prepared)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.made[pr] = fmt.Sprintf("%d@%v", seq, p.now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	return pr
}

func (p *preparingSender) DoPrepared(_ context.Context, res *probe.Result, pr *client.Prepared) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent[res.Seq] = p.made[pr]
	res.Disposition = probe.Accepted
}

func (p *preparingSender) Do(_ context.Context, res *probe.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent[res.Seq] = "unprepared"
	res.Disposition = probe.Accepted
}

func (p *preparingSender) Close() {}

// TestExecutePreparesWhileWaiting: a request whose time is still to come
// is prepared for its seq before the run waits for it; one already due is
// sent as it is.
func TestExecutePreparesWhileWaiting(t *testing.T) {
	clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &preparingSender{now: clock.Now, made: map[*client.Prepared]string{}, sent: map[uint64]string{}}
	Execute(context.Background(), Options{Offsets: []time.Duration{0, 10 * time.Millisecond, 30 * time.Millisecond},
		Sender: s, Now: clock.Now, Sleep: clock.Sleep})
	want := map[uint64]string{1: "unprepared", 2: "2@0s", 3: "3@10ms"}
	if fmt.Sprint(s.sent) != fmt.Sprint(want) {
		t.Fatalf("sent %v, want %v", s.sent, want)
	}
}
