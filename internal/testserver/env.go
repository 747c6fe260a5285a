package testserver

import (
	"os"
	"strings"
)

// inherited are the only variables a test's engram process takes from the
// environment of `go test`: what finds programs and temp space, the locale,
// and what configures the race detector and coverage. Everything else, in
// particular ENGRAM_*, OPENAI_*, HOME and the user's ~/.engram/config.json,
// would make a test's outcome depend on the machine it runs on.
var inherited = []string{"PATH", "TMPDIR", "TZ", "LANG", "LC_ALL", "LC_CTYPE", "GORACE", "GOCOVERDIR", "GOTRACEBACK"}

// Environ is the hermetic environment of an engram process started by a
// test: the allow-listed variables of the current environment, with HOME
// and ENGRAM_HOME set to home (an empty directory the test owns), so the
// built-in defaults apply unless the test passes more variables.
//
// ENGRAM_METRICS_ADDR is empty: a server started by a test serves no
// metrics unless the test asks for them, instead of binding the default
// 127.0.0.1:9464, which another engram on the machine (another test, a
// developer's server) may need. A test that wants metrics passes its own
// address (a flag, or the variable in its extra environment, which wins).
func Environ(home string) []string {
	env := []string{"HOME=" + home, "ENGRAM_HOME=" + home, "ENGRAM_METRICS_ADDR="}
	for _, name := range inherited {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// IsolateProcessEnv makes the current process as hermetic as Environ makes
// a child: it unsets every ENGRAM_* and OPENAI_* variable (but keeps the
// ENGRAM_TEST_* settings of the test run itself) and points HOME and
// ENGRAM_HOME at home. TestMain of a package that runs the server
// in-process calls it before m.Run, and after Binary, whose cache (and Go's
// build cache) lives under the real HOME.
func IsolateProcessEnv(home string) error {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(name, "ENGRAM_") || strings.HasPrefix(name, "OPENAI_")) && !strings.HasPrefix(name, "ENGRAM_TEST_") {
			if err := os.Unsetenv(name); err != nil {
				return err
			}
		}
	}
	if err := os.Setenv("HOME", home); err != nil {
		return err
	}
	return os.Setenv("ENGRAM_HOME", home)
}
