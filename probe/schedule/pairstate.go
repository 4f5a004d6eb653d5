package schedule

// pairState returns the state of the pair key, kept from an earlier loop of
// it or new; a stopped pair that starts again is no longer stopped. A new
// state continues from the seq floor (Engine.seqFloor), so its seqs never
// repeat those of a forgotten state of the same pair (docs/design.md,
// Fleets). e.mu is held.
func (e *Engine) pairState(key pairKey) *pairState {
	st := e.states[key]
	if st == nil {
		st = &pairState{}
		st.seq.Store(e.seqFloor)
		e.states[key] = st
	}
	if st.stoppedAt != nil {
		e.stoppedKeys.Remove(st.stoppedAt)
		st.stoppedAt = nil
	}
	return st
}

// keepStopped keeps the state of a pair that stopped (removed, drained),
// then forgets the states of the pairs stopped longest ago beyond
// KeptStopped, so the states of a fleet whose replicas come and go under
// new addresses stay bounded. e.mu is held.
func (e *Engine) keepStopped(key pairKey, st *pairState) {
	st.stoppedAt = e.stoppedKeys.PushBack(key)
	for e.stoppedKeys.Len() > e.o.KeptStopped {
		old := e.stoppedKeys.Remove(e.stoppedKeys.Front()).(pairKey)
		e.seqFloor = max(e.seqFloor, e.states[old].seq.Load())
		delete(e.states, old)
	}
}
