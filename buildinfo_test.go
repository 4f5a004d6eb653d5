package main

import (
	"runtime/debug"
	"testing"

	"github.com/prometheus/common/version"
)

func TestFillVersion(t *testing.T) {
	checkout := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abcd"},
		{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		name    string
		ldflags [4]string // version, revision, branch, build date
		bi      *debug.BuildInfo
		ok      bool
		want    [4]string
	}{
		{"go build in a dirty checkout", [4]string{}, checkout, true,
			[4]string{"devel", "0123abcd-modified", "unknown", "2026-11-30T10:00:00Z"}},
		{"go install of a release", [4]string{}, &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true,
			[4]string{"v1.2.3", "unknown", "unknown", "unknown"}},
		{"go run: no VCS stamp", [4]string{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true,
			[4]string{"devel", "unknown", "unknown", "unknown"}},
		{"no build info", [4]string{}, nil, false, [4]string{"unknown", "unknown", "unknown", "unknown"}},
		{"-ldflags win", [4]string{"1.0.0", "feed", "main", "20261201"}, checkout, true,
			[4]string{"1.0.0", "feed", "main", "20261201"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fields := [4]*string{&version.Version, &version.Revision, &version.Branch, &version.BuildDate}
			saved := [4]string{}
			for i, f := range fields {
				saved[i], *f = *f, c.ldflags[i]
			}
			defer func() {
				for i, f := range fields {
					*f = saved[i]
				}
			}()
			fillVersion(c.bi, c.ok)
			for i, f := range fields {
				if *f != c.want[i] {
					t.Errorf("field %d = %q, want %q", i, *f, c.want[i])
				}
			}
		})
	}
}
