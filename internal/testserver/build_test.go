package testserver

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBinaryHonoursTheMakefilesBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "engram")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(BinaryEnv, exe)
	if got, err := Binary(t.Context()); err != nil || got != exe {
		t.Fatalf("Binary() = %q, %v; want %q", got, err, exe)
	}
	notExe := filepath.Join(dir, "data")
	if err := os.WriteFile(notExe, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{notExe, dir, filepath.Join(dir, "missing")} {
		t.Setenv(BinaryEnv, bad)
		if got, err := Binary(t.Context()); err == nil {
			t.Errorf("%s=%s: Binary() = %q, want an error", BinaryEnv, bad, got)
		}
	}
}

func TestSourceHashFollowsTheBinarysInputsOnly(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hash := func() string {
		t.Helper()
		h, err := sourceHash(root, false)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	write("go.mod", "module example\n")
	write("a/a.go", "package a\n")
	write("a/m.sql", "create table t (x);\n")
	base := hash()

	changes := []struct {
		name      string
		rel, body string
		rebuild   bool
	}{
		{"a test file", "a/a_test.go", "package a\n", false},
		{"test data", "a/testdata/x.json", "{}", false},
		{"documentation", "README.md", "# x", false},
		{"a git file", ".git/HEAD", "ref: x", false},
		{"the built binary dir", "bin/engram", "ELF", false},
		{"an SDK's dependencies", "sdk/typescript/node_modules/x/index.js", "x", false},
		{"an SDK's build", "sdk/typescript/dist/index.js", "x", false},
		{"Python's byte code", "sdk/python/src/engram/__pycache__/client.pyc", "x", false},
		{"a source file", "a/a.go", "package a // changed\n", true},
		{"an embedded file", "a/m.sql", "create table u (x);\n", true},
		{"a new package", "b/b.go", "package b\n", true},
	}
	for _, c := range changes {
		write(c.rel, c.body)
		got := hash()
		if changed := got != base; changed != c.rebuild {
			t.Errorf("%s: hash changed = %v, want %v", c.name, changed, c.rebuild)
		}
		base = got
	}
	race, err := sourceHash(root, true)
	if err != nil {
		t.Fatal(err)
	}
	if race == base {
		t.Error("the race-built binary has the same hash as the plain one: one would be served for the other")
	}
}

func TestIsolateProcessEnv(t *testing.T) {
	// t.Setenv restores every variable after the test, also the unset ones.
	t.Setenv("HOME", os.Getenv("HOME"))
	t.Setenv("ENGRAM_HOME", "/home/user/.engram")
	t.Setenv("ENGRAM_EMBED_PROVIDER", "openai")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("ENGRAM_TEST_POSTGRES_URL", "postgres://ci")
	home := t.TempDir()
	if err := IsolateProcessEnv(home); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"HOME": home, "ENGRAM_HOME": home, "ENGRAM_TEST_POSTGRES_URL": "postgres://ci"} {
		if got := os.Getenv(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"ENGRAM_EMBED_PROVIDER", "OPENAI_API_KEY"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Errorf("%s = %q survived the isolation", name, v)
		}
	}
}
