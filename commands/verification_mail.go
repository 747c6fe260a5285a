package commands

import (
	"fmt"
	"strings"
	"time"
)

// verificationMail is the mail that carries a verification token. The token
// appears twice (decisions §8): at the end of a link, and alone on a line
// of its own so it can be copied or parsed. The link opens a page that
// asks before it verifies, because mail scanners follow links.
func verificationMail(publicURL, to, token string, ttl time.Duration) Mail {
	link := strings.TrimRight(publicURL, "/") + "/v1/auth/verify?token=" + token
	text := strings.Join([]string{
		"Welcome to Engram.",
		"",
		"Confirm your e-mail address by opening this link:",
		"",
		link,
		"",
		"or by sending this token to POST /v1/auth/verify:",
		"",
		token,
		"",
		fmt.Sprintf("The token can be used once and expires in %s. Verifying gives you your first API key.", humanDuration(ttl)),
		"If you did not ask for an Engram account, ignore this mail.",
		"",
	}, "\n")
	return Mail{To: to, Subject: "Verify your Engram account", Text: text}
}

func humanDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0 && d >= time.Hour:
		if d == time.Hour {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0 && d >= time.Minute:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
