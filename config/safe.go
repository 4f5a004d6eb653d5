package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/fileread"
)

// ConfigReadTimeout bounds reading the config file, so a reload from a
// mount that stopped answering fails instead of hanging.
const ConfigReadTimeout = 10 * time.Second

// SafeConfig holds the running configuration and swaps in a new one only
// when it loaded cleanly. The zero value is ready to use; Get returns nil
// until the first successful Reload.
type SafeConfig struct {
	reload sync.Mutex // serialises Reload so an older file never wins
	mu     sync.RWMutex
	cfg    *Config
	hash   [sha256.Size]byte
}

// Get returns the current configuration. Callers must not modify it.
func (s *SafeConfig) Get() *Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cfg
}

// Hash returns the hex SHA-256 of the file bytes of the current
// configuration, or "" before the first successful Reload.
func (s *SafeConfig) Hash() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.cfg == nil {
		return ""
	}
	return hex.EncodeToString(s.hash[:])
}

// Reload loads the file at path. A file byte-identical to the one already
// loaded is not parsed again and gives changed=false. A file that fails to
// load leaves the current configuration in place and returns the error.
// Files the configuration refers to (workload files, JSON schemas,
// credentials) are not part of the identity check.
func (s *SafeConfig) Reload(path string) (changed bool, err error) {
	s.reload.Lock()
	defer s.reload.Unlock()
	data, err := fileread.ReadWithin(path, fileread.ConfigLimit, ConfigReadTimeout)
	if err != nil {
		return false, fmt.Errorf("read config file: %w", err)
	}
	sum := sha256.Sum256(data)
	s.mu.RLock()
	same := s.cfg != nil && sum == s.hash
	s.mu.RUnlock()
	if same {
		return false, nil
	}
	cfg, err := Parse(data, path)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.cfg, s.hash = cfg, sum
	s.mu.Unlock()
	return true, nil
}
