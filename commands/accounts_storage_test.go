//go:build linux

package commands_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/internal/tmpfstest"
)

// A verification mail that the outbox cannot write for want of space is
// answered storage_full (507), not provider_unavailable: no mail relay is
// down, the server's disk is full.
func TestRegisterWhenTheOutboxDiskIsFull(t *testing.T) {
	disk := tmpfstest.Mount(t, 1<<20)
	outbox, err := mail.NewOutboxSender(filepath.Join(disk, "outbox"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpfstest.Fill(t, filepath.Join(disk, "filler"))
	full := outbox.Send(context.Background(), mail.Message{To: "ivan@example.com", Subject: "s", Text: "t"})
	if full == nil {
		t.Fatal("the outbox wrote a mail on a full disk")
	}

	fx := newAccountsFixture(t, time.Hour)
	fx.mail.fail = full
	_, err = fx.accounts.Register(context.Background(), domain.Metadata{}, "ivan@example.com")
	if domain.ErrorKind(err) != domain.KindStorageFull {
		t.Fatalf("register with the outbox's disk full: %v, want storage_full", err)
	}
}
