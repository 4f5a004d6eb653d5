package history

import "slices"

// failedBit marks, in an arena's index, an entry of a request that was not
// accepted.
const failedBit = 1 << 31

// arena keeps up to size encoded entries back to back in one buffer,
// oldest first: an entry costs its bytes and 4 bytes of index instead of
// an allocation and a 24-byte slice header of its own (a full pair of 200
// 16-token records: TestHistoryBytesPerFullPair). Bytes once written are
// never written again: dropping the oldest only moves the index past them,
// and making room copies the live entries to a new buffer, so an entry's
// bytes that a reader took under the History's lock stay valid after it.
// Offsets are 31 bits: a pair's kept entries stay under 2 GiB.
type arena struct {
	buf    []byte   // entries; bytes before the oldest's start are dropped ones
	starts []uint32 // ring of size: each entry's start in buf | failedBit
	size   int
	first  int // ring position of the oldest
	n      int // entries kept
}

func newArena(size int) arena { return arena{size: size} }

// start returns the start in buf of the i-th entry from the oldest, and
// whether it failed.
func (a *arena) start(i int) (int, bool) {
	s := a.starts[(a.first+i)%a.size]
	return int(s &^ failedBit), s&failedBit != 0
}

// at returns the i-th entry from the oldest and whether it failed.
func (a *arena) at(i int) (entry, bool) {
	s, failed := a.start(i)
	end := len(a.buf)
	if i+1 < a.n {
		end, _ = a.start(i + 1)
	}
	return entry{a.buf[s:end:end]}, failed
}

// push adds e, copied, as the newest entry; the arena must not be full.
func (a *arena) push(e []byte, failed bool) {
	if len(a.buf)+len(e) > cap(a.buf) {
		a.grow(len(e))
	}
	if a.starts == nil {
		a.starts = make([]uint32, a.size)
	}
	s := uint32(len(a.buf))
	if failed {
		s |= failedBit
	}
	a.starts[(a.first+a.n)%a.size] = s
	a.n++
	a.buf = append(a.buf, e...)
}

// pop drops the oldest entry and returns it with whether it failed; its
// bytes stay valid.
func (a *arena) pop() (entry, bool) {
	e, failed := a.at(0)
	a.first = (a.first + 1) % a.size
	a.n--
	if a.n == 0 {
		a.buf, a.first = a.buf[len(a.buf):], 0
	}
	return e, failed
}

// grow copies the live entries to a new buffer with room for need more
// bytes and some: while the arena fills, room for the entries still to
// come at the live ones' average size, up to doubling; once full, 1/16
// of the live bytes, so a full arena holds ~3% more than its entries on
// average and copies them once per ~size/16 entries added.
func (a *arena) grow(need int) {
	live := a.buf
	if a.n > 0 {
		s, _ := a.start(0)
		live = a.buf[s:]
	}
	room := len(live) / 16
	if a.n < a.size && a.n > 0 {
		room = max(room, min(len(live), (a.size-a.n)*len(live)/a.n))
	}
	buf := append(slices.Grow([]byte(nil), len(live)+need+room), live...)
	shift := uint32(len(a.buf) - len(live))
	for i := range a.n {
		a.starts[(a.first+i)%a.size] -= shift
	}
	a.buf = buf
}
