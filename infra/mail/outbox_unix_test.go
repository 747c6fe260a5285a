//go:build unix

package mail_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/engram-memory/engram/infra/mail"
)

// An outbox that already existed, readable by others, is restricted too:
// its files are live credentials.
func TestOutboxPermissionsOfAnExistingDirUnderUmask022(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	dir := filepath.Join(t.TempDir(), "outbox")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := mail.NewOutboxSender(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	path, err := o.Deliver(t.Context(), verificationMessage("alice@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}
