package mail

import (
	"testing"
	"time"
)

func TestParseSMTPURL(t *testing.T) {
	tests := []struct {
		url  string
		want smtpConfig
	}{
		{
			url:  "smtp://mail.example.com",
			want: smtpConfig{host: "mail.example.com", port: 587, from: DefaultFrom, tls: tlsOpportunistic, timeout: DefaultSMTPTimeout},
		},
		{
			url: "smtp://user:pass@mail.example.com:587",
			want: smtpConfig{host: "mail.example.com", port: 587, user: "user", pass: "pass", auth: true,
				from: DefaultFrom, tls: tlsOpportunistic, timeout: DefaultSMTPTimeout},
		},
		{
			// Percent-encoded credentials, as an API-key password often needs.
			url: "smtps://apikey%40example.com:p%40ss%2Fw%3Ard@smtp.example.com",
			want: smtpConfig{host: "smtp.example.com", port: 465, user: "apikey@example.com", pass: "p@ss/w:rd", auth: true,
				from: DefaultFrom, tls: tlsImplicit, timeout: DefaultSMTPTimeout},
		},
		{
			url:  "smtps://mail.example.com:2465?tls=mandatory",
			want: smtpConfig{host: "mail.example.com", port: 2465, from: DefaultFrom, tls: tlsImplicit, timeout: DefaultSMTPTimeout},
		},
		{
			url: "smtp://relay.internal:25?tls=none&from=Engram%20%3Cnoreply%40engram.example%3E&timeout=3s",
			want: smtpConfig{host: "relay.internal", port: 25, from: "Engram <noreply@engram.example>",
				tls: tlsNone, timeout: 3 * time.Second},
		},
		{
			url:  "SMTP://mail.example.com/?tls=MANDATORY",
			want: smtpConfig{host: "mail.example.com", port: 587, from: DefaultFrom, tls: tlsMandatory, timeout: DefaultSMTPTimeout},
		},
		{
			// Cleartext credentials are acceptable on loopback only.
			url: "smtp://u:p@127.0.0.1:2525?tls=none",
			want: smtpConfig{host: "127.0.0.1", port: 2525, user: "u", pass: "p", auth: true,
				from: DefaultFrom, tls: tlsNone, timeout: DefaultSMTPTimeout},
		},
		{
			url:  "smtp://[::1]:2525?tls=opportunistic",
			want: smtpConfig{host: "::1", port: 2525, from: DefaultFrom, tls: tlsOpportunistic, timeout: DefaultSMTPTimeout},
		},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := parseSMTPURL(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			got.redacted = "" // checked by TestSMTPSenderStringRedactsPassword
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
