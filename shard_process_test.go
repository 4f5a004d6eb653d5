package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// The sharded bench and capacity commands run here as a user runs them:
// each worker is a vllm-prober process of its own (docs/bench.md, "Sharded
// runs"), and so is the merge. The checks are counts, never latencies, so
// they hold on a loaded machine.

// writeShardDataset writes a custom (JSON Lines) dataset of prompts of
// different lengths, so a request's prompt shows in its prompt_tokens.
func writeShardDataset(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for i := range 12 {
		line, _ := json.Marshal(map[string]string{"prompt": "Tell me" + strings.Repeat(" about the weather", i+1)})
		b.Write(append(line, '\n'))
	}
	path := testfile.Temp(t, "prompts.jsonl", b.String())
	return path
}

// startAt is a --start-at far enough ahead for processes to start and
// pass their ready check on a loaded machine.
func startAt() (time.Time, string) {
	at := time.Now().Add(4 * time.Second).UTC().Truncate(time.Millisecond)
	return at, at.Format(time.RFC3339Nano)
}

// runProcs runs the binary once per argument list, all at once, and
// returns each process's exit code and combined output.
func runProcs(t *testing.T, argv ...[]string) ([]int, []string) {
	t.Helper()
	codes, outs := make([]int, len(argv)), make([]string, len(argv))
	var wg sync.WaitGroup
	for i, args := range argv {
		wg.Go(func() {
			var err error
			if codes[i], outs[i], err = daemontest.Output(exec.Command(binary, args...)); err != nil {
				codes[i], outs[i] = -1, err.Error()
			}
		})
	}
	wg.Wait()
	return codes, outs
}

// mustSucceed fails the test unless every process exited 0.
func mustSucceed(t *testing.T, codes []int, outs []string) {
	t.Helper()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("process %d exited %d:\n%s", i, c, outs[i])
		}
	}
}

// readLedgers reads the ledgers of one run's processes into their
// records by seq, reporting a seq that two ledgers hold.
func readLedgers(t *testing.T, paths ...string) map[uint64]ledger.Record {
	t.Helper()
	bySeq, from := map[uint64]ledger.Record{}, map[uint64]string{}
	for _, path := range paths {
		recs := ledgertest.Read(t, path)
		for _, r := range recs {
			if other, dup := from[r.Seq]; dup {
				t.Errorf("seq %d is in %s and in %s", r.Seq, other, path)
			}
			bySeq[r.Seq], from[r.Seq] = r, path
		}
	}
	return bySeq
}

// samePlan reports, for every request of one, a request of the union
// that differs in its planned offset from its run's start, its level and
// repeat, or (when both were served) its prompt.
func samePlan(t *testing.T, one, union map[uint64]ledger.Record, oneStart, unionStart time.Time) {
	t.Helper()
	if len(union) != len(one) || len(one) == 0 {
		t.Fatalf("the shards' ledgers hold %d requests, the one-process ledger %d", len(union), len(one))
	}
	for seq, w := range one {
		g, ok := union[seq]
		switch {
		case !ok:
			t.Errorf("seq %d is in no shard's ledger", seq)
		case g.Scheduled.Sub(unionStart) != w.Scheduled.Sub(oneStart):
			t.Errorf("seq %d planned at %v in a shard, %v in one process", seq, g.Scheduled.Sub(unionStart), w.Scheduled.Sub(oneStart))
		case fmt.Sprint(deref(g.Level), deref(g.Repeat)) != fmt.Sprint(deref(w.Level), deref(w.Repeat)):
			t.Errorf("seq %d at level %v repeat %v in a shard, %v %v in one process", seq, deref(g.Level), deref(g.Repeat), deref(w.Level), deref(w.Repeat))
		case g.PromptTokens > 0 && w.PromptTokens > 0 && g.PromptTokens != w.PromptTokens:
			t.Errorf("seq %d has %d prompt tokens in a shard, %d in one process: not the same prompt", seq, g.PromptTokens, w.PromptTokens)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// completedDisp are the dispositions vLLM counts as successful requests.
var completedDisp = map[probe.Disposition]bool{probe.Accepted: true, probe.LatencyFailure: true, probe.QualityFailure: true}

// TestShardedBenchProcesses runs one bench process and three shard
// processes of the same schedule, each against its own simulator, then
// merge as a process: the union of the shard ledgers is the one-process
// schedule request for request, merge's counts are the hand count of the
// shard ledgers, and merge exits 1 with a shard missing and 2 with shards
// of different runs.
func TestShardedBenchProcesses(t *testing.T) {
	faults := func(s *simulator.Server) { s.SetFaults(simulator.Faults{HTTP500: 0.15}) }
	oneSim, oneURL := startSimulatorServer(t)
	shardSim, shardURL := startSimulatorServer(t)
	faults(oneSim)
	faults(shardSim)
	dataset, dir := writeShardDataset(t), t.TempDir()
	const n, prompts = 3, 40
	start, at := startAt()
	common := []string{"bench", "--dataset-name=custom", "--dataset-path=" + dataset, "--random-output-len=4",
		"--num-prompts=" + strconv.Itoa(prompts), "--request-rate=25", "--result-dir=" + dir, "--start-at=" + at}

	argv := [][]string{append(append([]string{}, common...), "--base-url="+oneURL, "--seed=5", "--save-result", "--result-filename=one.json")}
	for i := range n {
		argv = append(argv, append(append([]string{}, common...), "--base-url="+shardURL, "--seed=5",
			fmt.Sprintf("--shard=%d/%d", i, n), fmt.Sprintf("--result-filename=shard-%d.json", i)))
	}
	// A worker of another run (another seed) at the same time, for the
	// refusal of mixed runs.
	argv = append(argv, append(append([]string{}, common...), "--base-url="+shardURL, "--seed=6", "--shard=0/3", "--result-filename=other-0.json"))
	codes, outs := runProcs(t, argv...)
	mustSucceed(t, codes, outs)

	one := readLedgers(t, filepath.Join(dir, "one.ledger.jsonl"))
	results, ledgers := make([]string, n), make([]string, n)
	for i := range n {
		results[i] = filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		ledgers[i] = strings.TrimSuffix(results[i], ".json") + ".ledger.jsonl"
	}
	union := readLedgers(t, ledgers...)
	t.Run("union of the shard ledgers is the one-process schedule", func(t *testing.T) {
		if len(one) != prompts {
			t.Errorf("one process offered %d requests, want %d", len(one), prompts)
		}
		samePlan(t, one, union, start, start)
	})

	offered, completed, accepted := len(union), 0, 0
	for _, r := range union {
		if completedDisp[r.Disposition] {
			completed++
		}
		if r.Disposition == probe.Accepted {
			accepted++
		}
	}
	if accepted == offered {
		t.Fatalf("all %d requests accepted: the simulator's faults did not show", offered)
	}
	t.Run("merge counts are the hand count of the shard ledgers", func(t *testing.T) {
		output := filepath.Join(t.TempDir(), "merged.json")
		out := checkRun(t, []string{"merge", "--output=" + output, results[2], results[0], results[1]}, 0,
			[]string{"Merged 3 of 3 shards of run ", "Shard 2/3 ("})
		for _, line := range []struct {
			name string
			want int
		}{{"Successful requests", completed}, {"Offered requests", offered}, {"accepted", accepted}} {
			re := regexp.MustCompile(`(?m)^` + line.name + `:\s+` + strconv.Itoa(line.want) + `\s*$`)
			if !re.MatchString(out) {
				t.Errorf("merge printed no %q line of %d (the ledgers' count):\n%s", line.name, line.want, out)
			}
		}
		b, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Offered      int            `json:"offered"`
			Completed    int            `json:"completed"`
			Dispositions map[string]int `json:"dispositions"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", output, err)
		}
		if doc.Offered != offered || doc.Completed != completed || doc.Dispositions[string(probe.Accepted)] != accepted {
			t.Errorf("merged result: offered %d completed %d accepted %d; the ledgers: %d, %d, %d",
				doc.Offered, doc.Completed, doc.Dispositions[string(probe.Accepted)], offered, completed, accepted)
		}
	})
	t.Run("a shard missing exits 1", func(t *testing.T) {
		checkRun(t, []string{"merge", results[0], results[2]}, 1, []string{"missing shards 1/3 of run", "Merged 2 of 3 shards"})
	})
	t.Run("shards of different runs exit 2", func(t *testing.T) {
		checkRun(t, []string{"merge", filepath.Join(dir, "other-0.json"), results[1], results[2]}, 2,
			[]string{"refusing to merge shards of different runs"})
	})
}

// capacityLevel is one repeat of a capacity report.
type capacityLevel struct {
	Rate         float64        `json:"offered_rate"`
	Repeat       int            `json:"repeat"`
	Pass         bool           `json:"pass"`
	Offered      int            `json:"offered"`
	Abandoned    int            `json:"abandoned"`
	Dispositions map[string]int `json:"dispositions"`
}

// capacityReport reads a capacity report's verdict and repeats.
func capacityReport(t *testing.T, path string) (rated float64, levels []capacityLevel) {
	t.Helper()
	var doc struct {
		Rated  float64         `json:"rated_capacity"`
		Levels []capacityLevel `json:"levels"`
	}
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		t.Fatalf("capacity report %s: %v", path, err)
	}
	return doc.Rated, doc.Levels
}

// glob returns the one file matching pattern.
func glob(t *testing.T, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	if len(m) != 1 {
		t.Fatalf("%s matches %v, want one file", pattern, m)
	}
	return m[0]
}

var ratedRE = regexp.MustCompile(`Rated capacity: [^\n]*`)

// TestShardedCapacityProcesses runs a fixed staircase as one capacity
// process and as two shard processes, each against its own saturating
// simulator, then merge as a process: the union of the shard ledgers is
// the one-process schedule, merge's repeats offer what the one process's
// did, and each repeat's pass and the rated capacity are those of the
// acceptance hand-counted from the shard ledgers.
func TestShardedCapacityProcesses(t *testing.T) {
	saturating := func(o *simulator.Options) {
		o.MaxNumSeqs = 2
		o.PrefillBase, o.PrefillPerToken = 2*time.Millisecond, 10*time.Microsecond
		o.DecodeBase, o.DecodePerSeq = 2*time.Millisecond, 500*time.Microsecond
	}
	_, oneURL := startSimulatorServer(t, saturating)
	_, shardURL := startSimulatorServer(t, saturating)
	dataset := writeShardDataset(t)
	const n = 2
	rates := []float64{10, 150}
	common := []string{"capacity", "--dataset-name=custom", "--dataset-path=" + dataset, "--random-output-len=24",
		"--rates=10,150", "--repeats=1", "--level-duration=1s", "--warmup=200ms", "--drain=300ms", "--timeout=400ms",
		"--seed=3", "--pass-acceptance=0.9", "--steady-ratio=0"}
	oneDir, shardDir := t.TempDir(), t.TempDir()
	start, at := startAt()
	argv := [][]string{append(append([]string{}, common...), "--base-url="+oneURL, "--start-at="+at, "--output-dir="+oneDir)}
	for i := range n {
		argv = append(argv, append(append([]string{}, common...), "--base-url="+shardURL, "--start-at="+at,
			fmt.Sprintf("--shard=%d/%d", i, n), "--output-dir="+shardDir))
	}
	codes, outs := runProcs(t, argv...)
	mustSucceed(t, codes, outs)

	one := readLedgers(t, glob(t, filepath.Join(oneDir, "capacity-*.ledger.jsonl")))
	results, ledgers := make([]string, n), make([]string, n)
	for i := range n {
		results[i] = glob(t, filepath.Join(shardDir, fmt.Sprintf("capacity-*-shard%dof%d.shard.json", i, n)))
		ledgers[i] = glob(t, filepath.Join(shardDir, fmt.Sprintf("capacity-*-shard%dof%d.ledger.jsonl", i, n)))
	}
	union := readLedgers(t, ledgers...)
	t.Run("union of the shard ledgers is the one-process schedule", func(t *testing.T) {
		samePlan(t, one, union, start, start)
	})

	output := filepath.Join(t.TempDir(), "merged.json")
	out := checkRun(t, []string{"merge", "--output=" + output, results[1], results[0]}, 0,
		[]string{"Merged 2 of 2 shards of capacity search ", "Shard 1/2 (", "Rated capacity: "})
	rated, levels := capacityReport(t, output)
	_, oneLevels := capacityReport(t, glob(t, filepath.Join(oneDir, "capacity-*[0-9].json")))
	t.Run("merged repeats offer what the one process's did", func(t *testing.T) {
		if len(levels) != len(rates) || len(oneLevels) != len(rates) {
			t.Fatalf("merged %d repeats, one process %d, want %d", len(levels), len(oneLevels), len(rates))
		}
		for i, l := range levels {
			if w := oneLevels[i]; l.Rate != w.Rate || l.Repeat != w.Repeat || l.Offered != w.Offered {
				t.Errorf("repeat %d: merged level %v #%d offered %d, one process level %v #%d offered %d",
					i, l.Rate, l.Repeat, l.Offered, w.Rate, w.Repeat, w.Offered)
			}
		}
	})
	t.Run("verdict is that of the union of the ledgers", func(t *testing.T) {
		type count struct{ offered, accepted int }
		byLevel := map[float64]count{}
		for _, r := range union {
			c := byLevel[*r.Level]
			c.offered++
			if r.Disposition == probe.Accepted {
				c.accepted++
			}
			byLevel[*r.Level] = c
		}
		wantRated, failed := 0.0, false
		for _, l := range levels {
			c := byLevel[l.Rate]
			pass := l.Abandoned == 0 && float64(c.accepted)/float64(c.offered) >= 0.9
			if l.Offered != c.offered || l.Dispositions[string(probe.Accepted)] != c.accepted || l.Pass != pass {
				t.Errorf("level %v: merged offered %d accepted %d pass %v; the ledgers %d, %d, pass %v",
					l.Rate, l.Offered, l.Dispositions[string(probe.Accepted)], l.Pass, c.offered, c.accepted, pass)
			}
			if !pass {
				failed = true
			} else if !failed {
				wantRated = l.Rate
			}
		}
		if rated != wantRated {
			t.Errorf("merged rated capacity %v, the ledgers' %v; merge printed %q", rated, wantRated, ratedRE.FindString(out))
		}
	})
	t.Run("a shard missing exits 1", func(t *testing.T) {
		checkRun(t, []string{"merge", results[0]}, 1, []string{"missing shards 1/2"})
	})
}
