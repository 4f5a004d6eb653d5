package fingerprint

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

func testPair(confirm int, prompts ...string) config.Pair {
	p := config.Probe{Name: "fp", API: config.APICompletions, Fingerprint: &config.Fingerprint{Tokens: 16, Confirm: confirm}}
	for _, s := range prompts {
		p.Workload.Prompts = append(p.Workload.Prompts, config.Prompt{Prompt: s})
	}
	return config.Pair{Key: config.PairKey{Target: "t", Probe: "fp"}, Target: config.Target{Name: "t", URL: "http://127.0.0.1:1"}, Probe: p}
}

// feed observes one request of prompt per letter of seq and returns how
// many confirmed a change.
func feed(t *Tracker, prompt int, seq string) int {
	changes := 0
	for _, c := range seq {
		res := &probe.Result{Fingerprint: &probe.OutputFingerprint{Prompt: prompt, Hash: string(c)}}
		t.Observe(res)
		if res.Fingerprint.Changed {
			changes++
		}
	}
	return changes
}

// TestTrackerSequences: with confirm 3, the first value seen three times
// in a row is the baseline, an isolated flip is not a change, and a
// change counts once, on the request that confirms it.
func TestTrackerSequences(t *testing.T) {
	for _, tt := range []struct {
		seq     string
		confirm int
		want    int
	}{
		{"AAABAA", 3, 0},
		{"AAABBB", 3, 1},
		{"AAABBABBB", 3, 1},
		{"ABAAABBB", 3, 1}, // a flip before the baseline does not become it
		{"BAAAB", 3, 0},
		{"AAABBBAAA", 3, 2}, // and back
		{"AAABCBCBC", 3, 0}, // no value repeats three times in a row
		{"AAABBBCCC", 3, 2},
		{"AB", 1, 1}, // confirm 1: every new value is a change
		{"AAAAAAAA", 3, 0},
		{"AAB", 3, 0}, // no baseline yet
	} {
		t.Run(tt.seq, func(t *testing.T) {
			tr := NewTracker(testPair(tt.confirm, "p"), nil, nil)
			if got := feed(tr, 0, tt.seq); got != tt.want {
				t.Errorf("%s with confirm %d: %d changes, want %d", tt.seq, tt.confirm, got, tt.want)
			}
		})
	}
}

// TestTrackerPerPrompt: prompts have their own baselines and runs; requests
// of one prompt do not interrupt the run of another.
func TestTrackerPerPrompt(t *testing.T) {
	tr := NewTracker(testPair(3, "a", "b"), nil, nil)
	changes := 0
	// Prompt 0: AAABBB (one change); prompt 1: XXXYXX (none), interleaved.
	p0, p1 := "AAABBB", "XXXYXX"
	for i := range p0 {
		changes += feed(tr, 0, p0[i:i+1])
		changes += feed(tr, 1, p1[i:i+1])
	}
	if changes != 1 {
		t.Errorf("%d changes, want 1 (prompt 0 only)", changes)
	}
	if got := feed(tr, 1, "YY"); got != 0 {
		t.Errorf("prompt 1 changed after YY with its earlier Y interrupted: %d", got)
	}
	if got := feed(tr, 5, "AAAB"); got != 0 {
		t.Errorf("a prompt index past the list counted %d changes", got)
	}
	var nilTracker *Tracker
	nilTracker.Observe(&probe.Result{Fingerprint: &probe.OutputFingerprint{Hash: "A"}})
}

// TestTrackerLog: a baseline logs at info, a change at warn with the prompt
// and both values.
func TestTrackerLog(t *testing.T) {
	var buf bytes.Buffer
	tr := NewTracker(testPair(2, "a", "b"), nil, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	feed(tr, 1, "AABB")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log lines %q, want a baseline and a change", lines)
	}
	for i, want := range []string{
		`level=INFO msg="output fingerprint baseline" target=t probe=fp prompt=1 fingerprint=A`,
		`level=WARN msg="output fingerprint changed" target=t probe=fp prompt=1 from=A to=B confirmed_by=2`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("log line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
}

// TestTrackerReload: a new configuration of the pair keeps the state of
// prompts whose answer depends on the same things, and restarts the others.
func TestTrackerReload(t *testing.T) {
	old := NewTracker(testPair(3, "a", "b"), nil, nil)
	feed(old, 0, "AAA")
	feed(old, 1, "XXX")

	rate := testPair(2, "a", "changed")
	rate.Probe.Rate = 5 // not part of the basis, nor is confirm
	tr := NewTracker(rate, old, nil)
	if got := feed(tr, 0, "BB"); got != 1 {
		t.Errorf("prompt 0 kept: %d changes after BB with confirm 2, want 1", got)
	}
	if got := feed(tr, 1, "YYY"); got != 0 {
		t.Errorf("prompt 1 changed its text: %d changes, want 0 (a new baseline)", got)
	}
	if got := feed(old, 0, "B"); got != 0 {
		t.Errorf("the old configuration's late request counted %d changes", got)
	}

	otherModel := testPair(3, "a", "b")
	otherModel.Target.Model = "other"
	if got := feed(NewTracker(otherModel, old, nil), 0, "CCC"); got != 0 {
		t.Errorf("another model kept the baseline: %d changes", got)
	}
	none := testPair(3, "a")
	none.Probe.Fingerprint = nil
	if NewTracker(none, old, nil) != nil {
		t.Error("a probe without fingerprint got a tracker")
	}
}

func TestHasher(t *testing.T) {
	type event struct {
		text   string
		tokens int
	}
	for _, tt := range []struct {
		name   string
		tokens int
		events []event
		same   string // the text whose fingerprint this must be
	}{
		{"first tokens only", 3, []event{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}, "abc"},
		{"unknown counts as one", 2, []event{{"a", 0}, {"b", 0}, {"c", 0}}, "ab"},
		{"usage counts", 4, []event{{"ab", 2}, {"cd", 2}, {"e", 1}}, "abcd"},
		{"the event reaching the count is whole", 3, []event{{"ab", 2}, {"cd", 2}, {"e", 1}}, "abcd"},
		{"shorter answer", 16, []event{{"a", 1}, {"b", 1}}, "ab"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHasher(tt.tokens)
			for _, e := range tt.events {
				h.Add(e.text, e.tokens)
			}
			want := NewHasher(1)
			want.Add(tt.same, 1)
			if got := h.Sum(); got != want.Sum() || len(got) != 16 {
				t.Errorf("Sum = %s, want %s (of %q)", got, want.Sum(), tt.same)
			}
		})
	}
	a, b := NewHasher(4), NewHasher(4)
	a.Add("ab", 1)
	b.Add("ba", 1)
	if a.Sum() == b.Sum() {
		t.Error("different texts, same fingerprint")
	}
}
