//go:build linux

package commands_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/mail"
)

// A verification mail that the outbox cannot write for want of space is
// answered storage_full (507), not provider_unavailable: no mail relay is
// down, the server's disk is full.
func TestRegisterWhenTheOutboxDiskIsFull(t *testing.T) {
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, fmt.Sprintf("size=%d", 1<<20)); err != nil {
		t.Fatalf("this test fills a small tmpfs of its own and must mount one (run it as root): mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
	outbox, err := mail.NewOutboxSender(filepath.Join(disk, "outbox"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 512))
	}
	f.Close()
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
