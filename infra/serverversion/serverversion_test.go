package serverversion_test

import (
	"testing"

	"github.com/engram-memory/engram/infra/serverversion"
)

func TestAtLeast(t *testing.T) {
	cases := []struct {
		version string
		want    bool
	}{
		{"1.12.0", true},
		{"1.12", true},
		{"1.13.0-rc.1", true},
		{"2.0.0", true},
		{"1.11.9", false},
		{"0.99.0", false},
		{"1", false},
		{"", false},
		{"v1.12.0", false},
		{"1.x.0", false},
	}
	for _, c := range cases {
		if got := serverversion.AtLeast(c.version, 1, 12); got != c.want {
			t.Errorf("AtLeast(%q, 1, 12) = %v, want %v", c.version, got, c.want)
		}
	}
}
