package config

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSafeConfigReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vllm-prober.yml")
	good := validTarget + validProbe
	changed := strings.Replace(good, "rate: 0.2", "rate: 0.5", 1)
	bad := strings.Replace(good, "rate: 0.2", "rate: -1", 1)

	var s SafeConfig
	if s.Get() != nil || s.Hash() != "" {
		t.Fatalf("zero SafeConfig has a config")
	}
	steps := []struct {
		name        string
		file        string // "" removes the file
		wantChanged bool
		wantErr     string
		wantRate    float64
	}{
		{"first load", good, true, "", 0.2},
		{"unchanged file is a no-op", good, false, "", 0.2},
		{"bad file keeps the old config", bad, false, "probes[0].rate: must be a finite number > 0, got -1", 0.2},
		{"good file after a bad one", changed, true, "", 0.5},
		{"missing file keeps the old config", "", false, "read config file", 0.5},
		{"back to the first file", good, true, "", 0.2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.file == "" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, path, st.file)
			}
			before, beforeHash := s.Get(), s.Hash()
			gotChanged, err := s.Reload(path)
			if gotChanged != st.wantChanged {
				t.Errorf("changed = %v, want %v", gotChanged, st.wantChanged)
			}
			switch {
			case st.wantErr == "" && err != nil:
				t.Fatalf("Reload: %v", err)
			case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
				t.Fatalf("Reload error %v, want it to contain %q", err, st.wantErr)
			}
			if got := s.Get().Probes[0].Rate; got != st.wantRate {
				t.Errorf("rate = %v, want %v", got, st.wantRate)
			}
			if !gotChanged && (s.Get() != before || s.Hash() != beforeHash) {
				t.Errorf("config or hash replaced without a change")
			}
			if gotChanged && s.Hash() == beforeHash {
				t.Errorf("hash kept after a change")
			}
		})
	}
}

func TestSafeConfigConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vllm-prober.yml")
	writeFile(t, path, validTarget+validProbe)
	var s SafeConfig
	if _, err := s.Reload(path); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if i%2 == 0 {
					_, _ = s.Reload(path)
				} else if s.Get() == nil || s.Hash() == "" {
					t.Error("Get returned nil during reloads")
				}
			}
		}()
	}
	wg.Wait()
}
