package deploytest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vllm-prober/vllm-prober/config"
)

// loadConfig validates a prober config the way `vllm-prober --config.check`
// does (config.Load: strict keys, defaults, validation) and returns it. The
// file is written to dir first, so relative paths resolve there.
func loadConfig(dir string, data []byte) (*config.Config, error) {
	path := filepath.Join(dir, "vllm-prober.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("write config: %w", err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return cfg, nil
}
