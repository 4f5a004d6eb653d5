package ledgertest

import (
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

func TestRead(t *testing.T) {
	path := testfile.Temp(t, "ledger.jsonl", `{"seq":1,"target":"t","probe":"p"}`+"\n"+`{"seq":2,"target":"t","probe":"p"}`+"\n")
	recs := Read(t, path)
	if len(recs) != 2 || recs[0].Seq != 1 || recs[1].Seq != 2 {
		t.Errorf("records %+v, want seq 1 and 2", recs)
	}
}
