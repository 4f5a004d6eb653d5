package httpclient

import (
	"testing"

	"github.com/prometheus/common/version"
)

func TestUserAgent(t *testing.T) {
	saved := version.Version
	t.Cleanup(func() { version.Version = saved })
	for _, tc := range []struct{ name, version, want string }{
		{"no version", "", "vllm-prober"},
		{"release", "v1.2.3", "vllm-prober/v1.2.3"},
		{"local build", "devel", "vllm-prober/devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			version.Version = tc.version
			if got := UserAgent(); got != tc.want {
				t.Errorf("UserAgent() = %q, want %q", got, tc.want)
			}
		})
	}
}
