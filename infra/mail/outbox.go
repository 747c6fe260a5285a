package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/datadir"
)

// OutboxSender writes each message as an .eml file into a directory. It is
// the delivery of last resort when no SMTP relay is configured: the operator
// (or a test) reads the verification token from the file. It is safe for
// concurrent use.
type OutboxSender struct {
	dir    string
	logger *slog.Logger
}

// NewOutboxSender creates dir with mode 0700, or restricts an existing dir
// to 0700: the files hold live verification tokens (see
// datadir.MakePrivate). logger receives one line per written file; nil
// discards.
func NewOutboxSender(dir string, logger *slog.Logger) (*OutboxSender, error) {
	if dir == "" {
		return nil, errors.New("mail: outbox directory not set")
	}
	// Absolute, so the logged location is usable whatever the reader's cwd.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("mail: outbox directory: %w", err)
	}
	if err := datadir.MakePrivate(abs); err != nil {
		return nil, fmt.Errorf("mail: outbox: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &OutboxSender{dir: abs, logger: logger}, nil
}

// Dir is the absolute outbox directory.
func (o *OutboxSender) Dir() string { return o.dir }

// Send writes m to the outbox; see Deliver.
func (o *OutboxSender) Send(ctx context.Context, m Message) error {
	_, err := o.Deliver(ctx, m)
	return err
}

// Deliver writes m to the outbox and returns the file's path. The file
// appears complete or not at all (written to a hidden temp file, synced, then
// renamed), so a reader polling the directory never sees half a message.
func (o *OutboxSender) Deliver(ctx context.Context, m Message) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("mail: outbox: %w", err)
	}
	now := time.Now().UTC()
	msg, err := compose(DefaultFrom, m, now, true)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := msg.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("mail: outbox: render message: %w", err)
	}
	name, err := outboxName(now)
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.dir, name)
	if err := writeFileAtomic(o.dir, path, toLF(buf.Bytes())); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			err = fmt.Errorf("%w: %w", domain.ErrStorageFull, err)
		}
		return "", fmt.Errorf("mail: outbox: %w", err)
	}
	o.logger.InfoContext(ctx, "mail written to outbox", "path", path, "to", m.To, "subject", m.Subject)
	return path, nil
}

// outboxName sorts by time (fixed-width UTC timestamp with nanoseconds) and
// cannot collide in practice: two files would need the same nanosecond and
// the same 64 random bits.
func outboxName(t time.Time) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("mail: outbox: random name: %w", err)
	}
	return t.Format("20060102T150405.000000000") + "Z-" + hex.EncodeToString(r[:]) + ".eml", nil
}

// toLF stores the message with Unix line endings, as Maildir and mbox do on
// disk. net/mail reads either form, and LF keeps a token line matchable by
// line-anchored tools (grep -x, ^TOKEN$), which a trailing CR would defeat.
func toLF(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// writeFileAtomic writes data to path via a temp file in dir (same file
// system, so the rename is atomic). os.CreateTemp creates files with mode
// 0600, which is what the outbox wants.
func writeFileAtomic(dir, path string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, ".tmp-*.part")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	// Sync before rename: otherwise a crash can leave a named but empty file.
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
