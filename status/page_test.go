package status

import (
	"strings"
	"testing"
	"time"
)

func TestRenderMetricsLink(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{"default", "", `href="metrics"`},
		{"telemetry path", "/m", `href="m"`},
		{"nested telemetry path", "/x/metrics", `href="x/metrics"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			if err := Render(&sb, Page{Now: time.Unix(0, 0), MetricsPath: tc.path}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sb.String(), tc.want) {
				t.Errorf("page lacks %s", tc.want)
			}
		})
	}
}
