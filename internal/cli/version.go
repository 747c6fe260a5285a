package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are set at link time by `make build`
// (-ldflags "-X github.com/engram-memory/engram/internal/cli.version=..."
// and ".commit=..."); a binary built
// otherwise falls back to the build information Go records.
var (
	version string
	commit  string
)

// versionText is what `engram version` prints: the version (-ldflags, else
// the module version `go install module@version` records, else "devel"),
// the commit (-ldflags, else the VCS revision Go stamps), and the Go
// toolchain and platform.
func versionText(version, commit string, info *debug.BuildInfo, goVersion string) string {
	modified := false
	if info != nil {
		if version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && commit == "":
				commit = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				modified = true
			}
		}
	}
	if version == "" {
		version = "devel"
	}
	if commit == "" {
		commit = "unknown"
	} else if modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("engram %s\ncommit %s\n%s %s/%s\n", version, commit, goVersion, runtime.GOOS, runtime.GOARCH)
}

func buildVersionText() string {
	info, _ := debug.ReadBuildInfo()
	return versionText(version, commit, info, runtime.Version())
}
