// Package logonce remembers which warnings were logged, so a repeated one
// is logged once.
package logonce

import "sync"

// Set remembers up to Max keys, so a repeated warning is logged once
// without unbounded memory.
type Set struct {
	Max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

// First reports whether key is new (and records it while there is room).
func (s *Set) First(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[key]; ok {
		return false
	}
	if s.seen == nil {
		s.seen = map[string]struct{}{}
	}
	if len(s.seen) >= s.Max {
		return false
	}
	s.seen[key] = struct{}{}
	return true
}
