package cli

import (
	"flag"
	"strings"
	"testing"
)

func TestParseFlagsPrecedence(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default", nil, nil, "127.0.0.1:8080"},
		{"env fills an unset flag", nil, map[string]string{"ENGRAM_ADDR": "127.0.0.1:9000"}, "127.0.0.1:9000"},
		{"flag wins over env", []string{"--addr", "127.0.0.1:7000"}, map[string]string{"ENGRAM_ADDR": "127.0.0.1:9000"}, "127.0.0.1:7000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			if err := parseFlags(serveFlags(&cfg), c.args); err != nil {
				t.Fatal(err)
			}
			if cfg.Addr != c.want {
				t.Fatalf("addr = %q, want %q", cfg.Addr, c.want)
			}
		})
	}
}

func TestParseFlagsEnvTwinsAndErrors(t *testing.T) {
	t.Setenv("ENGRAM_DATA_DIR", "/tmp/x")
	t.Setenv("ENGRAM_SMTP_URL", "smtp://127.0.0.1:2525")
	t.Setenv("ENGRAM_MAIL_OUTBOX", "/tmp/outbox")
	t.Setenv("ENGRAM_EMBED_PROVIDER", "openai")
	t.Setenv("ENGRAM_SESSION_TTL", "2h")
	t.Setenv("ENGRAM_KURRENTDB_MAX_APPEND_SIZE", "16777216")
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), nil); err != nil {
		t.Fatal(err)
	}
	if cfg.EventStore.KurrentMaxAppendSize != 16<<20 {
		t.Fatalf("ENGRAM_KURRENTDB_MAX_APPEND_SIZE not applied: %d", cfg.EventStore.KurrentMaxAppendSize)
	}
	if cfg.DataDir != "/tmp/x" || cfg.SMTPURL != "smtp://127.0.0.1:2525" || cfg.MailOutbox != "/tmp/outbox" || cfg.EmbedProvider != "openai" || cfg.SessionTTL.Hours() != 2 {
		t.Fatalf("env twins not applied: %+v", cfg)
	}

	t.Setenv("ENGRAM_RATE_BURST", "lots")
	var bad serveConfig
	fs := serveFlags(&bad)
	fs.SetOutput(discard{})
	if err := parseFlags(fs, nil); err == nil {
		t.Fatal("a malformed ENGRAM_RATE_BURST was accepted")
	}
	var unknown serveConfig
	fs = serveFlags(&unknown)
	fs.SetOutput(discard{})
	if err := parseFlags(fs, []string{"--no-such-flag"}); err == nil || err == flag.ErrHelp {
		t.Fatalf("unknown flag: err = %v", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestEventStoreURLPasswordOnlyFromTheEnvironment(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr bool
	}{
		{"no password on the command line", []string{"--event-store", "postgres", "--event-store-url", "postgres://engram@db/engram"}, nil, false},
		{"password in the URL on the command line", []string{"--event-store-url", "postgres://engram:hunter2@db/engram"}, nil, true},
		{"password parameter on the command line", []string{"--event-store-url", "postgres://engram@db/engram?password=hunter2"}, nil, true},
		{"password in a DSN on the command line", []string{"--event-store-url", "host=db user=engram password=hunter2"}, nil, true},
		{"password in ENGRAM_EVENT_STORE_URL", nil, map[string]string{"ENGRAM_EVENT_STORE_URL": "postgres://engram:hunter2@db/engram"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			fs := serveFlags(&cfg)
			if err := parseFlags(fs, c.args); err != nil {
				t.Fatal(err)
			}
			err := checkEventStoreSecret(c.args, cfg.EventStore)
			if (err != nil) != c.wantErr {
				t.Fatalf("checkEventStoreSecret = %v, want error %v", err, c.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error repeats the password: %v", err)
			}
		})
	}
}

func TestPostgresURLPasswordOnlyFromTheEnvironment(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr bool
	}{
		{"no password on the command line", []string{"--read-models", "postgres", "--postgres-url", "postgres://engram@db/rm"}, nil, false},
		{"password in the URL on the command line", []string{"--postgres-url", "postgres://engram:hunter2@db/rm"}, nil, true},
		{"password in a DSN on the command line", []string{"--postgres-url=host=db user=engram password=hunter2"}, nil, true},
		{"password in ENGRAM_POSTGRES_URL", []string{"--read-models", "postgres"}, map[string]string{"ENGRAM_POSTGRES_URL": "postgres://engram:hunter2@db/rm"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			fs := serveFlags(&cfg)
			if err := parseFlags(fs, c.args); err != nil {
				t.Fatal(err)
			}
			if cfg.ReadModels.URL == "" {
				t.Fatal("the URL was not read")
			}
			err := checkReadModelsSecret(c.args, cfg.ReadModels)
			if (err != nil) != c.wantErr {
				t.Fatalf("checkReadModelsSecret = %v, want error %v", err, c.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error repeats the password: %v", err)
			}
		})
	}
}

// --vector-quantize (or its env twin) turns on the embedded vector index's
// int8 quantisation; it is off by default.
func TestVectorQuantizeFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default", nil, nil, false},
		{"flag", []string{"--vector-quantize"}, nil, true},
		{"env twin", nil, map[string]string{"ENGRAM_VECTOR_QUANTIZE": "true"}, true},
		{"flag off wins over env", []string{"--vector-quantize=false"}, map[string]string{"ENGRAM_VECTOR_QUANTIZE": "true"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			if err := parseFlags(serveFlags(&cfg), c.args); err != nil {
				t.Fatal(err)
			}
			if got := cfg.Indexes.VectorOptions.Quantize; got != c.want {
				t.Fatalf("Quantize = %v, want %v", got, c.want)
			}
		})
	}
}
