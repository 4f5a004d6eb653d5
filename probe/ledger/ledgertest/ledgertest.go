// Package ledgertest reads a ledger back in tests that count its records
// by hand: the ledgers they count are written whole, so a read error or a
// torn line ends the test.
package ledgertest

import (
	"testing"

	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// Read returns the records of the ledger at path, ending the test when it
// cannot be read or holds a torn line.
func Read(t testing.TB, path string) []ledger.Record {
	t.Helper()
	recs, torn, err := ledger.Read(path)
	if err != nil || torn != 0 {
		t.Fatalf("read ledger %s: %v (%d torn lines)", path, err, torn)
	}
	return recs
}
