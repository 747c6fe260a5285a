package main

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseModes(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"hybrid,vector,keyword", []string{"hybrid", "vector", "keyword"}, false},
		{" keyword , hybrid,keyword,", []string{"keyword", "hybrid"}, false},
		{"", nil, true},
		{"hybrid,fuzzy", nil, true},
	}
	for _, tc := range tests {
		got, err := parseModes(tc.in)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseModes(%q) = %v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, errUsage) {
			t.Errorf("parseModes(%q): error %v is not a usage error", tc.in, err)
		}
	}
}

func TestProtocol(t *testing.T) {
	p, err := parseProtocol("turns")
	if err != nil || !p.includes("raw_entries") || p.includes("notes") || !reflect.DeepEqual(p.searchTypes(), []string{"raw_entries"}) {
		t.Fatalf("turns: %v %v", p, err)
	}
	p, err = parseProtocol("turns+notes")
	if err != nil || !p.includes("notes") || p.searchTypes() != nil {
		t.Fatalf("turns+notes: %v %v", p, err)
	}
	if _, err := parseProtocol("notes"); !errors.Is(err, errUsage) {
		t.Fatalf("bad protocol: %v", err)
	}
}

func TestParseQualityFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(qualityConfig) bool
		wantErr bool
	}{
		{"defaults", nil, func(c qualityConfig) bool {
			return c.limit == 10 && c.proto == protoTurns && len(c.modes) == 3 && c.checkTargets &&
				reflect.DeepEqual(c.targets.metrics, []string{"R@10", "MRR@10", "nDCG@10"}) && c.server.server == ""
		}, false},
		{"custom", []string{"--modes", "keyword", "--protocol", "turns+notes", "--target-metrics", "nDCG@10", "--target-tolerance", "0.01", "--out", "x"},
			func(c qualityConfig) bool {
				return c.out == "x" && c.proto == protoTurnsNotes && c.modes[0] == "keyword" && c.targets.tolerance == 0.01
			}, false},
		{"limit below 10", []string{"--limit", "5"}, nil, true},
		{"bad metric", []string{"--target-metrics", "R@3"}, nil, true},
		{"bad mode", []string{"--modes", "semantic"}, nil, true},
		{"stray argument", []string{"corpus.jsonl"}, nil, true},
		{"unknown flag", []string{"--nope"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseQualityFlags(tc.args, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tc.check != nil && !tc.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

func TestParseLoadFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(loadConfig) bool
		wantErr bool
	}{
		{"defaults", nil, func(c loadConfig) bool {
			return c.n == 10000 && c.concurrency == 8 && c.duration == 20*time.Second && len(c.modes) == 3 && c.recallQueries == 100 && c.via == viaREST
		}, false},
		{"custom", []string{"--n", "100000", "--duration", "5s", "--modes", "hybrid"}, func(c loadConfig) bool {
			return c.n == 100000 && c.duration == 5*time.Second && reflect.DeepEqual(c.modes, []string{"hybrid"})
		}, false},
		{"zero n", []string{"--n", "0"}, nil, true},
		{"huge concurrency", []string{"--concurrency", "1000"}, nil, true},
		{"unbounded duration", []string{"--duration", "2h"}, nil, true},
		{"bad mode", []string{"--modes", "x"}, nil, true},
		{"recall off", []string{"--recall-queries", "0"}, func(c loadConfig) bool { return c.recallQueries == 0 }, false},
		{"recall past the queries", []string{"--queries", "50", "--recall-queries", "51"}, nil, true},
		{"negative recall", []string{"--recall-queries", "-1"}, nil, true},
		{"via mcp", []string{"--via", "mcp"}, func(c loadConfig) bool { return c.via == viaMCP && c.mcpClient == mcpClientRaw }, false},
		{"via mcp, the SDK's client", []string{"--via", "mcp", "--mcp-client", "sdk"}, func(c loadConfig) bool { return c.mcpClient == mcpClientSDK }, false},
		{"an unknown MCP client", []string{"--via", "mcp", "--mcp-client", "python"}, nil, true},
		{"via something else", []string{"--via", "grpc"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseLoadFlags(tc.args, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tc.check != nil && !tc.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

func TestParseReplayFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(replayConfig) bool
		wantErr bool
	}{
		{"defaults", nil, func(c replayConfig) bool {
			return c.n == 10000 && c.alone && !c.skipFill && c.out == "bench-out/replay.json"
		}, false},
		{"custom", []string{"--n", "200000", "--each=false", "--data-dir", "/tmp/d", "--skip-fill"}, func(c replayConfig) bool {
			return c.n == 200000 && !c.alone && c.skipFill && c.server.dataDir == "/tmp/d"
		}, false},
		{"postgres log", []string{"--event-store", "postgres", "--event-store-url", "postgres://u@127.0.0.1:5432/db"}, func(c replayConfig) bool {
			return c.eventStore.Backend == "postgres" && c.eventStore.URL == "postgres://u@127.0.0.1:5432/db" &&
				strings.Contains(c.server.serveArgs, "--event-store postgres --event-store-url postgres://u@127.0.0.1:5432/db")
		}, false},
		{"postgres log without its URL", []string{"--event-store", "postgres"}, nil, true},
		{"an unknown log", []string{"--event-store", "mongo"}, nil, true},
		{"zero n", []string{"--n", "0"}, nil, true},
		{"skip fill without a data dir", []string{"--skip-fill"}, nil, true},
		{"ingest concurrency out of range", []string{"--ingest-concurrency", "17"}, nil, true},
		{"stray argument", []string{"all"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseReplayFlags(tc.args, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, errUsage) {
				t.Fatalf("error %v is not a usage error", err)
			}
			if tc.check != nil && !tc.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

func TestParseRestartFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(restartConfig) bool
		wantErr bool
	}{
		{"defaults", []string{"--data-dir", "/tmp/d"}, func(c restartConfig) bool {
			return c.dataDir == "/tmp/d" && c.runs == 3 && c.tail == 1000 && c.out == "bench-out/restart.json" && c.stack == ""
		}, false},
		{"custom", []string{"--data-dir", "/tmp/d", "--runs", "5", "--tail", "0", "--dashboard-stack", "big"}, func(c restartConfig) bool {
			return c.runs == 5 && c.tail == 0 && c.stack == "big"
		}, false},
		{"no data dir", nil, nil, true},
		{"zero runs", []string{"--data-dir", "/tmp/d", "--runs", "0"}, nil, true},
		{"negative tail", []string{"--data-dir", "/tmp/d", "--tail", "-1"}, nil, true},
		{"stray argument", []string{"--data-dir", "/tmp/d", "now"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseRestartFlags(tc.args, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, errUsage) {
				t.Fatalf("error %v is not a usage error", err)
			}
			if tc.check != nil && !tc.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		args []string
		want int
	}{
		{nil, exitUsage},
		{[]string{"frobnicate"}, exitUsage},
		{[]string{"help"}, exitOK},
		{[]string{"quality", "-h"}, exitOK},
		{[]string{"load", "--n", "-1"}, exitUsage},
		{[]string{"load", "--server", "http://10.1.2.3:8080/v1", "--api-key", "k"}, exitUsage}, // not loopback
		{[]string{"quality", "--corpus", "testdata/no-such-file.jsonl"}, exitError},
	}
	for _, tc := range tests {
		if got := run(ctx, tc.args, io.Discard, io.Discard); got != tc.want {
			t.Errorf("run(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}
