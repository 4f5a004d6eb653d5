package probe

// pairKey names one (target, probe) pair.
type pairKey struct {
	target, probe string
}

// String returns "target/probe", the pair's name in logs and errors.
func (k pairKey) String() string {
	return k.target + "/" + k.probe
}
