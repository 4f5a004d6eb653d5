package shard

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// IsCapacity reports whether path holds a capacity worker's shard result
// (else merge takes it for a bench result).
func IsCapacity(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return false
	}
	_, ok := doc["capacity_shard"]
	return ok
}

// ReadCapacityResults reads capacity workers' shard results and checks
// they are shards of one search, each given once.
func ReadCapacityResults(paths []string) ([]Result[*CapacityFile], error) {
	return readResults(paths, "capacity_shard.shard", func(path string) (*CapacityFile, string, string, error) {
		f, err := readCapacityFile(path)
		if err != nil {
			return nil, "", "", err
		}
		return f, f.RunID, f.Shard, nil
	})
}

// readCapacityFile reads a capacity worker's shard result.
func readCapacityFile(path string) (*CapacityFile, error) {
	var doc struct {
		Shard *CapacityFile `json:"capacity_shard"`
	}
	if err := decode(path, &doc); err != nil {
		return nil, err
	}
	f := doc.Shard
	if f == nil || f.RunID == "" {
		return nil, fmt.Errorf("%s: not a sharded capacity result (no \"capacity_shard\" block with a run_id; run capacity with --shard I/N)", path)
	}
	var err error
	if f.Header.Burstiness, err = strconv.ParseFloat(f.Burstiness, 64); err != nil {
		return nil, fmt.Errorf("%s: capacity_shard.burstiness %q: %v", path, f.Burstiness, err)
	}
	for i, run := range f.Runs {
		for j, r := range run.Requests {
			if r.Result == nil {
				return nil, fmt.Errorf("%s: capacity_shard.runs[%d].requests[%d] has no result", path, i, j)
			}
		}
	}
	return f, nil
}
