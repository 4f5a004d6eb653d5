package status

import "encoding/binary"

// sealedMinutes holds a pair's minutes older than the mutable ones of its
// timeline, oldest first, as varints in one byte slice: a minute of a pair
// at 0.05 req/s (3 requests, 45 ITLs) is 20–35 bytes rather than a
// minuteBucket's ~104 and its two histograms' arrays (docs/design.md,
// section "Status page"). A record is the minute as its difference from
// the previous record's (0 for the first, whose minute is first), the four
// counts, a byte with a bit per non-zero disposition and those counts, and
// each histogram as its number of entries, then per entry the difference
// of its bucket index from the previous entry's and its count.
type sealedMinutes struct {
	buf         []byte
	first, last int64 // the first and the last record's minutes; buf empty: none
}

// add appends b, whose minute is after every record's.
func (s *sealedMinutes) add(b *minuteBucket) {
	if len(s.buf) == 0 {
		s.first, s.last = b.minute, b.minute
	}
	s.buf = binary.AppendUvarint(s.buf, uint64(b.minute-s.last))
	s.last = b.minute
	for _, n := range [...]uint32{b.ended, b.accepted, b.judged, b.completed} {
		s.buf = binary.AppendUvarint(s.buf, uint64(n))
	}
	var mask byte
	for i, n := range b.dispositions {
		if n > 0 {
			mask |= 1 << i
		}
	}
	s.buf = append(s.buf, mask)
	for _, n := range b.dispositions {
		if n > 0 {
			s.buf = binary.AppendUvarint(s.buf, uint64(n))
		}
	}
	s.buf = appendHist(s.buf, &b.ttft)
	s.buf = appendHist(s.buf, &b.itl)
}

func appendHist(buf []byte, h *latencyHist) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(h.counts)))
	prev := 0
	for _, e := range h.counts {
		i := histEntryIndex(e)
		buf = binary.AppendUvarint(buf, uint64(i-prev))
		buf = binary.AppendUvarint(buf, uint64(e&histCountMax))
		prev = i
	}
	return buf
}

// sealedReader decodes the records of a sealedMinutes in order.
type sealedReader struct {
	buf    []byte
	off    int   // where the next record starts
	minute int64 // the last decoded record's minute
}

func (s *sealedMinutes) reader() sealedReader { return sealedReader{buf: s.buf, minute: s.first} }

// next decodes the next record into b, reusing its histograms' arrays;
// false at the end. Only add writes the records, so a malformed one
// cannot occur; it would end the records rather than panic.
func (r *sealedReader) next(b *minuteBucket) bool {
	d := decoder{buf: r.buf, off: r.off}
	b.minute = r.minute + int64(d.uvarint())
	for _, n := range [...]*uint32{&b.ended, &b.accepted, &b.judged, &b.completed} {
		*n = uint32(d.uvarint())
	}
	mask := d.byte()
	for i := range b.dispositions {
		b.dispositions[i] = 0
		if mask&(1<<i) != 0 {
			b.dispositions[i] = uint32(d.uvarint())
		}
	}
	d.hist(&b.ttft)
	d.hist(&b.itl)
	if d.bad {
		return false
	}
	r.off, r.minute = d.off, b.minute
	return true
}

// decoder reads varints from buf at off; bad is set, and every later
// read is 0, once one is malformed or past the end.
type decoder struct {
	buf []byte
	off int
	bad bool
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) byte() byte {
	if d.bad || d.off >= len(d.buf) {
		d.bad = true
		return 0
	}
	d.off++
	return d.buf[d.off-1]
}

func (d *decoder) hist(h *latencyHist) {
	h.reset()
	i := 0
	for range min(d.uvarint(), histBuckets) {
		i += int(d.uvarint())
		h.counts = append(h.counts, uint32(min(i, histBuckets-1))<<24|uint32(min(d.uvarint(), histCountMax)))
	}
}

// dropOutside drops the records of minutes before from or after to.
func (s *sealedMinutes) dropOutside(from, to int64) {
	if len(s.buf) == 0 || (s.first >= from && s.last <= to) {
		return
	}
	var b minuteBucket
	r := s.reader()
	start, end := -1, 0 // where the kept records start and end
	first, last := int64(0), int64(0)
	for at := r.off; r.next(&b); at = r.off {
		if b.minute >= from && b.minute <= to {
			if start < 0 {
				start, first = at, b.minute
			}
			end, last = r.off, b.minute
		}
	}
	if start < 0 {
		s.buf, s.first, s.last = s.buf[:0], 0, 0
		return
	}
	// The first kept record's minute difference becomes 0: first is its
	// minute now.
	_, n := binary.Uvarint(s.buf[start:])
	kept := copy(s.buf[1:], s.buf[start+n:end])
	s.buf[0] = 0
	s.buf, s.first, s.last = s.buf[:1+kept], first, last
}

// popFrom removes the records of minute from on, decoding them into
// buckets in order, for the timeline to make mutable again when its clock
// went back.
func (s *sealedMinutes) popFrom(from int64, into []minuteBucket) []minuteBucket {
	if len(s.buf) == 0 || s.last < from {
		return into
	}
	r := s.reader()
	var b minuteBucket
	cut, last := -1, int64(0)
	for at := r.off; r.next(&b); at = r.off {
		if b.minute >= from {
			if cut < 0 {
				cut = at
			}
			into = append(into, b)
			b = minuteBucket{} // the next record gets arrays of its own
		} else {
			last = b.minute
		}
	}
	if cut <= 0 {
		s.buf, s.first, s.last = s.buf[:0], 0, 0
	} else {
		s.buf, s.last = s.buf[:cut], last
	}
	return into
}
