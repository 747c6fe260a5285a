package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}
	cases := []struct {
		name            string
		version, commit string
		info            *debug.BuildInfo
		want            []string
	}{
		{"ldflags win", "v2.0.0", "def456", installed, []string{"engram v2.0.0\n", "commit def456\n"}},
		{"go install module@version", "", "", installed, []string{"engram v1.2.3\n", "commit unknown\n"}},
		{"VCS stamp of a dirty tree", "", "", stamped, []string{"engram devel\n", "commit abc123 (modified)\n"}},
		{"no build info", "", "", nil, []string{"engram devel\n", "commit unknown\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := versionText(c.version, c.commit, c.info, "go1.99.0")
			for _, w := range append(c.want, "go1.99.0 ") {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
}
