package cli

import (
	"debug/elf"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// What every engram process pays before it works
// (docs/benchmarks.md#the-process-floor): these tests keep what was cut
// from coming back.

// The binary is static wherever it is built for use: without the dynamic
// loader and the C library a process starts sooner. `make build`, `make
// run` and the binary `make test` hands the end-to-end tests build it
// without cgo (the Dockerfile's build is checked by deploy's tests), and
// so does testserver's own build, so the tests drive what ships.
func TestBuildsAreStatic(t *testing.T) {
	for _, target := range []string{"build", "run", "test-bin"} {
		out, err := exec.Command("make", "-C", "../..", "-n", target).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, " build ") || strings.Contains(line, " run ") {
				if !strings.HasPrefix(line, "CGO_ENABLED=0 ") {
					t.Errorf("make %s runs %q, want it without cgo (CGO_ENABLED=0)", target, strings.TrimSpace(line))
				}
			}
		}
	}
	f, err := elf.Open(binPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader: the end-to-end tests drive another build than the one that ships", binPath)
		}
	}
}

// Go initialises every package linked into the binary at every start,
// whatever the command. These packages were linked for little and cost
// every process their initialisation; each has a replacement of a few
// lines in the package named.
func TestBinaryLinksNoPackageItCanDoWithout(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/engram-memory/engram/cmd/engram").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for pkg, instead := range map[string]string{
		// Its init reads the host name and random bytes and builds a
		// logger; the dashboard used one middleware of it.
		"github.com/go-chi/chi/v5/middleware": "dashboard's headAsGet",
	} {
		if slices.Contains(deps, pkg) {
			t.Errorf("the binary links %s; use %s instead", pkg, instead)
		}
	}
}

// Our packages build nothing large at initialisation: a table, a set of
// words or a regular expression that some command uses is built at its
// first use (sync.OnceValue), so that the processes that never use it do
// not allocate it, nor fault in the heap pages it fills. The runtime's
// inittrace reports what each package's initialisation allocated; that is
// deterministic, unlike its time.
func TestOurPackagesAllocateLittleAtInitialisation(t *testing.T) {
	const budget = 8 << 10 // bytes per package; the largest allocates ~3 KiB
	cmd := exec.Command(binPath, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("engram version: %v\n%s", err, out)
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		// init PACKAGE @T ms, D ms clock, B bytes, N allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," || !strings.HasPrefix(f[1], "github.com/engram-memory/engram/") {
			continue
		}
		seen++
		bytes, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", line, err)
		}
		if bytes > budget {
			t.Errorf("%s allocates %d bytes at initialisation, over %d: build what it needs at first use", f[1], bytes, budget)
		}
	}
	if seen == 0 {
		t.Fatalf("no inittrace line of ours in:\n%s", out)
	}
}
