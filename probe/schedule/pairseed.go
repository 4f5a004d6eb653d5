package schedule

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/vllm-prober/vllm-prober/config"
)

// pairKey names one (target, probe, replica) pair.
type pairKey = config.PairKey

// pairSeed derives the arrival seed of one pair from its name and the
// probe's workload seed, so runs of the same config repeat their schedule
// while pairs differ from each other.
func pairSeed(key pairKey, p config.Probe) int64 {
	h := fnv.New64a()
	h.Write([]byte(key.Target))
	h.Write([]byte{0})
	h.Write([]byte(key.Probe))
	h.Write([]byte{0})
	if key.Replica != "" {
		// Replicas of one target start apart, not in lockstep; a static
		// pair keeps the seed it always had.
		h.Write([]byte(key.Replica))
		h.Write([]byte{0})
	}
	var seed int64
	if p.Workload.Random != nil {
		seed = p.Workload.Random.Seed
	}
	h.Write(binary.LittleEndian.AppendUint64(nil, uint64(seed)))
	return int64(h.Sum64())
}
