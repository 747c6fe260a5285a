package cli

import (
	"testing"
	"time"
)

// TestAbuseLimitFlags: the slow-client, connection and throttle limits
// have documented defaults and ENGRAM_* twins.
func TestAbuseLimitFlags(t *testing.T) {
	var def serveConfig
	if err := parseFlags(serveFlags(&def), nil); err != nil {
		t.Fatal(err)
	}
	want := serveConfig{
		ReadHeaderTimeout: 10 * time.Second, BodyReadTimeout: time.Minute, WriteTimeout: time.Minute,
		IdleTimeout: time.Minute, MaxConnections: 4096, MaxInFlight: 256, ResendInterval: time.Minute,
	}
	if got := limitsOf(def); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}

	env := map[string]string{
		"ENGRAM_READ_HEADER_TIMEOUT":          "1s",
		"ENGRAM_BODY_READ_TIMEOUT":            "2s",
		"ENGRAM_WRITE_TIMEOUT":                "3s",
		"ENGRAM_IDLE_TIMEOUT":                 "4s",
		"ENGRAM_MAX_CONNECTIONS":              "5",
		"ENGRAM_MAX_IN_FLIGHT":                "6",
		"ENGRAM_VERIFICATION_RESEND_INTERVAL": "7s",
		"ENGRAM_SMTP_URL_FILE":                "/run/secrets/smtp-url",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), nil); err != nil {
		t.Fatal(err)
	}
	want = serveConfig{
		ReadHeaderTimeout: time.Second, BodyReadTimeout: 2 * time.Second, WriteTimeout: 3 * time.Second,
		IdleTimeout: 4 * time.Second, MaxConnections: 5, MaxInFlight: 6, ResendInterval: 7 * time.Second,
	}
	if got := limitsOf(cfg); got != want || cfg.SMTPURLFile != "/run/secrets/smtp-url" {
		t.Errorf("from the environment %+v (smtp-url-file %q), want %+v", got, cfg.SMTPURLFile, want)
	}
}

func limitsOf(c serveConfig) serveConfig {
	return serveConfig{
		ReadHeaderTimeout: c.ReadHeaderTimeout, BodyReadTimeout: c.BodyReadTimeout, WriteTimeout: c.WriteTimeout,
		IdleTimeout: c.IdleTimeout, MaxConnections: c.MaxConnections, MaxInFlight: c.MaxInFlight, ResendInterval: c.ResendInterval,
	}
}
