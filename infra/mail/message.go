package mail

import (
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"time"
	"unicode/utf8"

	gomail "github.com/wneessen/go-mail"
)

// Message is one plain-text mail. Text is sent as is (apart from line-ending
// normalisation), so a line the caller puts in it stays a line of its own in
// what the recipient, or the outbox file, gets.
type Message struct {
	To      string
	Subject string
	Text    string
}

// DefaultFrom is the From address when the SMTP URL names none, and the From
// address of outbox files.
const DefaultFrom = "engram@localhost"

// maxLineOctets is the RFC 5322 §2.1.1 line limit (excluding CRLF). A body with
// a longer line cannot travel as 8bit and is quoted-printable encoded instead.
const maxLineOctets = 998

// validate rejects what would otherwise produce a malformed or injected header,
// before any connection is opened or file created.
func (m Message) validate() error {
	if strings.TrimSpace(m.To) == "" {
		return errors.New("mail: message has no recipient")
	}
	// CR/LF in a header value would let the value start a new header.
	if strings.ContainsAny(m.To, "\r\n") {
		return errors.New("mail: recipient contains a line break")
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return errors.New("mail: subject contains a line break")
	}
	if _, err := netmail.ParseAddress(m.To); err != nil {
		return fmt.Errorf("mail: invalid recipient %q: %w", m.To, err)
	}
	// The body is declared charset=utf-8; do not lie about it.
	if !utf8.ValidString(m.Subject) || !utf8.ValidString(m.Text) {
		return errors.New("mail: subject or text is not valid UTF-8")
	}
	return nil
}

// compose builds the MIME message. Both senders use it, so an outbox file holds
// the same headers and body an SMTP relay would have received.
//
// allow8bit says whether the body may be sent unencoded (8bit): always for the
// outbox, and over SMTP only if the server announces 8BITMIME. 8bit keeps every
// body line verbatim, which is what makes the token greppable; quoted-printable
// would turn "?token=" into "?token=3D" and wrap lines longer than 76 octets.
// (go-mail's "7bit" setting is not used: v0.8.1 quoted-printable encodes the
// body while labelling it 7bit.)
func compose(from string, m Message, now time.Time, allow8bit bool) (*gomail.Msg, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	text := normalizeNewlines(m.Text)
	enc := gomail.EncodingQP
	if allow8bit && fitsIn8bit(text) {
		enc = gomail.NoEncoding
	}
	msg := gomail.NewMsg(
		gomail.WithCharset(gomail.CharsetUTF8),
		gomail.WithEncoding(enc),
		gomail.WithNoDefaultUserAgent(),
	)
	if err := msg.From(from); err != nil {
		return nil, fmt.Errorf("mail: invalid sender %q: %w", from, err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("mail: invalid recipient %q: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetDateWithValue(now)
	msg.SetMessageID()
	msg.SetBodyString(gomail.TypeTextPlain, text)
	return msg, nil
}

// normalizeNewlines turns CRLF and lone CR into LF. The SMTP data writer and
// the quoted-printable encoder then emit canonical CRLF, and the outbox writes
// LF; a stray CR would otherwise survive into a token line and break matching.
func normalizeNewlines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// fitsIn8bit reports whether text is valid as an RFC 6152 8bit body: no NUL
// and no line longer than maxLineOctets.
func fitsIn8bit(text string) bool {
	if strings.IndexByte(text, 0) >= 0 {
		return false
	}
	for line := range strings.SplitSeq(text, "\n") {
		if len(line) > maxLineOctets {
			return false
		}
	}
	return true
}
