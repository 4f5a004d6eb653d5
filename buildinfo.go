package main

import (
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// unknownBuild is shown for what neither -ldflags nor the build info
// recorded.
const unknownBuild = "unknown"

// init fills the version fields that -ldflags left empty (a plain `go
// build`, `go install` or `go run`; deploy/build.sh sets them all) from
// what Go recorded in the binary.
func init() { fillVersion(debug.ReadBuildInfo()) }

// fillVersion sets each empty version field from bi: the module version
// ("v1.2.3", or "devel" for a build of a checkout), the VCS revision
// (with "-modified" for a dirty tree, as prometheus/common/version spells
// it) and the commit time as the build date. Go records no branch, and
// `go run` and builds outside a checkout record no VCS stamp: those
// fields say "unknown".
func fillVersion(bi *debug.BuildInfo, ok bool) {
	settings := map[string]string{}
	if ok {
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	set := func(field *string, value string) {
		if *field != "" {
			return
		}
		if *field = value; value == "" {
			*field = unknownBuild
		}
	}
	if ok {
		set(&version.Version, strings.Trim(bi.Main.Version, "()"))
	} else {
		set(&version.Version, "")
	}
	rev := settings["vcs.revision"]
	if rev != "" && settings["vcs.modified"] == "true" {
		rev += "-modified"
	}
	set(&version.Revision, rev)
	set(&version.BuildDate, settings["vcs.time"])
	set(&version.Branch, "")
}

// buildSummary is the build line of the status pages.
func buildSummary() string {
	return version.Info() + " · build date " + version.BuildDate + " · " + version.GoVersion
}
