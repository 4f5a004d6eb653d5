package ledger

import (
	"crypto/rand"
	"encoding/hex"
)

// runID identifies this process in every record it writes.
var runID = newRunID()

// RunID returns the random id of this process, carried by every ledger
// record as run_id. Within one run_id, seq of a pair counts from 1 without
// gaps (a replica pair that returns after the engine forgot its state starts
// higher: docs/design.md, Fleets), so a reader can tell records lost from a
// restart.
func RunID() string { return runID }

// newRunID returns 16 random hex digits.
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
