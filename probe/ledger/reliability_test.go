package ledger_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// TestLedgerAppendsAfterTornTail: after a crash cut the last line short,
// a restarted ledger must not glue its first record to the remains.
func TestLedgerAppendsAfterTornTail(t *testing.T) {
	tests := []struct {
		name      string
		tail      string
		wantTorn  int
		wantFirst int // records before the restart that survive
	}{
		{"cut mid-record", `{"seq":2,"target":"t","pro`, 1, 1},
		{"cut before the newline", `{"seq":2,"target":"t","probe":"p","disposition":"accepted"}`, 0, 2},
		{"clean end", "", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.jsonl")
			first := `{"seq":1,"target":"t","probe":"p","disposition":"accepted"}` + "\n"
			if err := os.WriteFile(path, []byte(first+tc.tail), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.Open(config.Ledger{Path: path}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for seq := uint64(10); seq < 13; seq++ {
				l.Write(&probe.Result{Seq: seq, Target: "t", Probe: "p", Disposition: probe.Accepted, Scheduled: time.Now()})
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			recs, torn, err := ledger.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if torn != tc.wantTorn || len(recs) != tc.wantFirst+3 {
				t.Fatalf("%d records, %d torn; want %d records, %d torn", len(recs), torn, tc.wantFirst+3, tc.wantTorn)
			}
			if last := recs[len(recs)-3]; last.Seq != 10 {
				t.Errorf("first record after the restart has seq %d, want 10", last.Seq)
			}
		})
	}
}
